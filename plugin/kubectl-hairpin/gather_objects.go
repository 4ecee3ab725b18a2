package kubectlhairpin

import (
	"context"
	"fmt"
	"slices"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// objects are the cluster-wide lists that several parts of the facts read.
type objects struct {
	services       []core.Service
	deployments    []apps.Deployment
	daemonSets     []apps.DaemonSet
	ingressClasses []networking.IngressClass
	ingresses      []networking.Ingress
	gatewayClasses []gw.GatewayClass
	gateways       []gw.Gateway
	routes         []any // *gw.HTTPRoute, *gw.GRPCRoute, *gw.TLSRoute
}

// servedAPIs are the resources of the optional API groups that the
// cluster serves, as "group/version/resource".
type servedAPIs map[string]bool

// The optional API groups: Gateway API and the Gateway controllers whose
// policies turn PROXY on. A group the cluster does not serve is skipped
// quietly.
const (
	envoyGroup = "gateway.envoyproxy.io"
	ngfGroup   = "gateway.nginx.org"
)

// firstServed returns the first of versions in which group serves
// resource.
func (a servedAPIs) firstServed(group, resource string, versions ...string) (schema.GroupVersionResource, bool) {
	for _, v := range versions {
		if a[group+"/"+v+"/"+resource] {
			return schema.GroupVersionResource{Group: group, Version: v, Resource: resource}, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// discover is the first read: when it fails, nothing can be read.
func (g *gatherer) discover(context.Context) error {
	groups, err := g.c.Kube.Discovery().ServerGroups()
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the apiserver refused the credentials (401 Unauthorized): %w", err)
	case err != nil:
		return fmt.Errorf("discovery: %w", err)
	}
	g.api = servedAPIs{}
	for _, grp := range groups.Groups {
		if !slices.Contains([]string{gw.GroupName, envoyGroup, ngfGroup}, grp.Name) {
			continue
		}
		for _, v := range grp.Versions {
			list, err := g.c.Kube.Discovery().ServerResourcesForGroupVersion(v.GroupVersion)
			if ok, err := g.read(err, "discover "+v.GroupVersion, "its kinds are not checked"); !ok {
				if err != nil {
					return err
				}
				continue
			}
			for _, r := range list.APIResources {
				g.api[v.GroupVersion+"/"+r.Name] = true
			}
		}
	}
	return nil
}

// listObjects reads the cluster-wide lists.
func (g *gatherer) listObjects(ctx context.Context) error {
	o := &g.cache
	all := meta.ListOptions{}
	kube := g.c.Kube

	svcs, err := kube.CoreV1().Services("").List(ctx, all)
	if err := g.keep(err, "list services in all namespaces", "load balancers and controller Services are not looked at", func() { o.services = svcs.Items }); err != nil {
		return err
	}
	deps, err := kube.AppsV1().Deployments("").List(ctx, all)
	if err := g.keep(err, "list deployments.apps in all namespaces", "ingress-nginx controllers are looked for only by their ConfigMaps", func() { o.deployments = deps.Items }); err != nil {
		return err
	}
	g.deploymentsDenied = apierrors.IsForbidden(err)
	dss, err := kube.AppsV1().DaemonSets("").List(ctx, all)
	if err := g.keep(err, "list daemonsets.apps in all namespaces", "ingress-nginx DaemonSets and node-local-dns are not looked for", func() { o.daemonSets = dss.Items }); err != nil {
		return err
	}
	g.daemonSetsDenied = apierrors.IsForbidden(err)
	ics, err := kube.NetworkingV1().IngressClasses().List(ctx, all)
	if err := g.keep(err, "list ingressclasses.networking.k8s.io", "the classes of controllers and Ingresses are guessed", func() { o.ingressClasses = ics.Items }); err != nil {
		return err
	}
	ings, err := kube.NetworkingV1().Ingresses("").List(ctx, all)
	if err := g.keep(err, "list ingresses.networking.k8s.io in all namespaces", "Ingress hosts are not checked", func() { o.ingresses = ings.Items }); err != nil {
		return err
	}
	if g.api[gw.GroupName+"/v1/gatewayclasses"] {
		gcs, err := g.c.Gateway.GatewayV1().GatewayClasses().List(ctx, all)
		if err := g.keep(err, "list gatewayclasses.gateway.networking.k8s.io", "Gateway controllers are not looked for", func() { o.gatewayClasses = gcs.Items }); err != nil {
			return err
		}
	}
	if g.api[gw.GroupName+"/v1/gateways"] {
		gws, err := g.c.Gateway.GatewayV1().Gateways("").List(ctx, all)
		if err := g.keep(err, "list gateways.gateway.networking.k8s.io in all namespaces", "Gateways and their routes are not checked", func() { o.gateways = gws.Items }); err != nil {
			return err
		}
	}
	return g.listRoutes(ctx)
}

// routeKinds are the route kinds whose hostnames the plugin serves, with
// the versions it knows, newest first, and the type every version is read
// into: the fields read (hostnames, parentRefs) are the same in all.
var routeKinds = []struct {
	resource string
	versions []string
	newObj   func() any
}{
	{"httproutes", []string{"v1"}, func() any { return &gw.HTTPRoute{} }},
	{"grpcroutes", []string{"v1", "v1alpha2"}, func() any { return &gw.GRPCRoute{} }},
	{"tlsroutes", []string{"v1", "v1alpha3", "v1alpha2"}, func() any { return &gw.TLSRoute{} }},
}

func (g *gatherer) listRoutes(ctx context.Context) error {
	for _, k := range routeKinds {
		gvr, ok := g.api.firstServed(gw.GroupName, k.resource, k.versions...)
		if !ok {
			continue
		}
		l, err := g.c.Dynamic.Resource(gvr).Namespace("").List(ctx, meta.ListOptions{})
		if ok, err := g.read(err, "list "+gvr.Resource+"."+gvr.Group+" in all namespaces", "their hosts are not checked"); !ok {
			if err != nil {
				return err
			}
			continue
		}
		for _, item := range l.Items {
			obj := k.newObj()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, obj); err != nil {
				continue // not what the plugin could read either
			}
			g.cache.routes = append(g.cache.routes, obj)
		}
	}
	return nil
}
