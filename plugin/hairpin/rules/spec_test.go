package rules

import (
	"reflect"
	"strings"
	"testing"
)

func TestTargetAnnotationsParse(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    TargetSpec
		wantErr string
	}{
		{"zones and classes, whitespace ignored", map[string]string{
			ZonesAnnotation: " Example.com , example.org. ", IngressClassesAnnotation: "nginx, tenant-a",
		}, TargetSpec{Zones: []string{"example.com.", "example.org."}, IngressClasses: []string{"nginx", "tenant-a"}}, ""},
		{"every class", map[string]string{ZonesAnnotation: "example.com", IngressClassesAnnotation: "*", GatewayClassesAnnotation: "*"},
			TargetSpec{Zones: []string{"example.com."}, IngressClasses: []string{"*"}, GatewayClasses: []string{"*"}}, ""},
		{"gateways by name", map[string]string{ZonesAnnotation: "example.com", GatewaysAnnotation: "infra/public,tenant-a/web"},
			TargetSpec{Zones: []string{"example.com."}, Gateways: []string{"infra/public", "tenant-a/web"}}, ""},
		{"no zones disables", map[string]string{IngressClassesAnnotation: "nginx"}, TargetSpec{}, "missing or empty"},
		{"empty zones disables", map[string]string{ZonesAnnotation: " "}, TargetSpec{}, "missing or empty"},
		{"bad zone", map[string]string{ZonesAnnotation: "exa mple.com"}, TargetSpec{}, `zone "exa mple.com"`},
		{"wildcard zone", map[string]string{ZonesAnnotation: "*.example.com"}, TargetSpec{}, `zone "*.example.com"`},
		{"empty item", map[string]string{ZonesAnnotation: "example.com,,example.org"}, TargetSpec{}, "empty item 2"},
		{"bad class", map[string]string{ZonesAnnotation: "example.com", IngressClassesAnnotation: "Bad_Class"}, TargetSpec{}, `"Bad_Class"`},
		{"gateway without namespace", map[string]string{ZonesAnnotation: "example.com", GatewaysAnnotation: "public"}, TargetSpec{}, "want namespace/name"},
		{"direct service, whitespace ignored", map[string]string{ZonesAnnotation: "example.net", GatewaysAnnotation: "gateways/public", DirectServiceAnnotation: " gateways/cilium-gateway-public "},
			TargetSpec{Zones: []string{"example.net."}, Gateways: []string{"gateways/public"}, Direct: "gateways/cilium-gateway-public"}, ""},
		{"direct service without namespace", map[string]string{ZonesAnnotation: "example.net", DirectServiceAnnotation: "public"}, TargetSpec{}, DirectServiceAnnotation + `: "public": want namespace/name`},
		{"two direct services", map[string]string{ZonesAnnotation: "example.net", DirectServiceAnnotation: "a/b,c/d"}, TargetSpec{}, DirectServiceAnnotation},
		{"direct without zones disables", map[string]string{DirectServiceAnnotation: "gateways/public"}, TargetSpec{}, "missing or empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewTarget("ns/t", tc.ann)
			if tc.wantErr != "" {
				if got.Err == nil || !strings.Contains(got.Err.Error(), tc.wantErr) || got.Enabled() {
					t.Fatalf("err = %v, want a disabled target and an error containing %q", got.Err, tc.wantErr)
				}
				return
			}
			if got.Err != nil || !got.Spec.Equal(tc.want) || !got.Enabled() {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSpecEqualSeesEveryField: a field added to TargetSpec is compared by
// Equal, so that a changed annotation reaches the plugin's targets.
func TestSpecEqualSeesEveryField(t *testing.T) {
	typ := reflect.TypeFor[TargetSpec]()
	for i := range typ.NumField() {
		var changed TargetSpec
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.New(f.Type().Elem()).Elem()))
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("TargetSpec.%s is a %s; teach this test to change it", typ.Field(i).Name, f.Kind())
		}
		if (TargetSpec{}).Equal(changed) {
			t.Errorf("Equal does not compare TargetSpec.%s", typ.Field(i).Name)
		}
	}
}

// TestTargetAnnotationsKeepsWhatTheSpecReads: the informer keeps exactly the
// annotations ParseTargetSpec reads, and nothing for a Service without any.
func TestTargetAnnotationsKeepsWhatTheSpecReads(t *testing.T) {
	ann := map[string]string{"other": "x"}
	if got := TargetAnnotations(ann); got != nil {
		t.Fatalf("TargetAnnotations(%v) = %v; want nil", ann, got)
	}
	full := map[string]string{
		ZonesAnnotation: "example.com", IngressClassesAnnotation: "nginx", GatewayClassesAnnotation: "eg", GatewaysAnnotation: "t/gw", "other": "x",
	}
	kept := TargetAnnotations(full)
	want, wantErr := ParseTargetSpec(full)
	got, err := ParseTargetSpec(kept)
	if err != nil || wantErr != nil || !got.Equal(want) {
		t.Fatalf("the kept annotations %v parse to %+v, %v; want %+v", kept, got, err, want)
	}
	if _, ok := kept["other"]; ok {
		t.Errorf("kept %v; want only the target annotations", kept)
	}
}
