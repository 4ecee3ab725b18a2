package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"
)

// EnvNginx names the nginx binary; default [DefaultNginx].
const EnvNginx = "HAIRPIN_NGINX"

// DefaultNginx is Debian's nginx (package nginx).
const DefaultNginx = "/usr/sbin/nginx"

// NginxOptions configures [StartNginx]. The zero value is a single-process
// nginx on a fresh loopback address with a PROXY-protocol HTTP and TLS
// listener each.
type NginxOptions struct {
	// Name labels the process in messages and log dumps, for tests that run
	// several controllers. Default: "nginx".
	Name string
	// Path is the nginx binary. Default: $HAIRPIN_NGINX, else /usr/sbin/nginx.
	Path string
	// IP is the address to listen on. Default: [FreeLoopbackIP].
	IP netip.Addr
	// HTTPPort and TLSPort are the proxy_protocol listeners' ports.
	// Default: free ports.
	HTTPPort, TLSPort int
	// PlainListeners adds an HTTP and a TLS listener without proxy_protocol
	// (for benchmarks that compare with and without the proxy).
	PlainListeners bool
	// WithoutProxyProtocol makes the HTTP and TLS listeners plain: a
	// controller that does not speak the PROXY protocol, whose clients must
	// reach it directly.
	WithoutProxyProtocol bool
	// Hosts are the certificate's names. Default: app.example.com,
	// *.example.com, example.com and IP.
	Hosts []string
	// Workers, when > 0, runs a master with that many worker processes (as
	// root); 0 runs one process with master_process off.
	Workers int
	// ErrorLogLevel is the error_log level. Default: notice, ingress-nginx's
	// default error-log-level; "info" also shows closed connections.
	ErrorLogLevel string
}

// Nginx is a running nginx configured the way ingress-nginx configures itself
// with use-proxy-protocol: "true": every listener of the ingress expects a
// PROXY header (and closes connections without one, logging "broken header"),
// and the real client address comes from that header
// (real_ip_header proxy_protocol; set_real_ip_from 127.0.0.0/8 and ::1).
// With NginxOptions.WithoutProxyProtocol it is a controller that does not
// speak the PROXY protocol at all.
//
// Locations: "/" answers 200 with "ok host=$host client=$remote_addr
// port=$server_port"; "/bulk/" serves files made by [Nginx.BulkFile].
type Nginx struct {
	// Proc is the nginx process.
	Proc *Process
	// Dir holds the config, logs, temp folders, certificate and web root.
	Dir string
	// IP is the listen address.
	IP netip.Addr
	// HTTPAddr and TLSAddr ("ip:port") are the proxy_protocol listeners.
	HTTPAddr, TLSAddr string
	// PlainHTTPAddr and PlainTLSAddr are the listeners without
	// proxy_protocol; empty unless NginxOptions.PlainListeners.
	PlainHTTPAddr, PlainTLSAddr string
	// Cert is the self-signed serving certificate.
	Cert *Cert
	// ProxyProtocol reports whether HTTPAddr and TLSAddr require a PROXY
	// header (see NginxOptions.WithoutProxyProtocol).
	ProxyProtocol bool
	// ConfigPath, AccessLogPath and ErrorLogPath are nginx's files.
	ConfigPath, AccessLogPath, ErrorLogPath string
}

// NginxLogFormat is the nginx log_format directive named "hairpin": one JSON
// object per request, which [AccessLogEntry] parses.
const NginxLogFormat = `log_format hairpin escape=json '{"time":"$time_iso8601",'
        '"proxy_protocol_addr":"$proxy_protocol_addr","proxy_protocol_port":"$proxy_protocol_port",'
        '"proxy_protocol_server_addr":"$proxy_protocol_server_addr","proxy_protocol_server_port":"$proxy_protocol_server_port",'
        '"remote_addr":"$remote_addr","remote_port":"$remote_port","realip_remote_addr":"$realip_remote_addr",'
        '"server_addr":"$server_addr","server_port":"$server_port",'
        '"host":"$host","ssl_server_name":"$ssl_server_name","scheme":"$scheme",'
        '"request":"$request","status":"$status","bytes_sent":"$bytes_sent"}';`

// AccessLogEntry is one line of the access log (nginx variables, as strings).
type AccessLogEntry struct {
	Time                    string `json:"time"`
	ProxyProtocolAddr       string `json:"proxy_protocol_addr"`
	ProxyProtocolPort       string `json:"proxy_protocol_port"`
	ProxyProtocolServerAddr string `json:"proxy_protocol_server_addr"`
	ProxyProtocolServerPort string `json:"proxy_protocol_server_port"`
	RemoteAddr              string `json:"remote_addr"`
	RemotePort              string `json:"remote_port"`
	RealIPRemoteAddr        string `json:"realip_remote_addr"`
	ServerAddr              string `json:"server_addr"`
	ServerPort              string `json:"server_port"`
	Host                    string `json:"host"`
	SSLServerName           string `json:"ssl_server_name"`
	Scheme                  string `json:"scheme"`
	Request                 string `json:"request"`
	Status                  string `json:"status"`
	BytesSent               string `json:"bytes_sent"`
}

// StartNginx writes the configuration and a certificate into a temp folder,
// starts nginx and waits until every listener accepts connections. nginx is
// stopped in t.Cleanup.
func StartNginx(t testing.TB, opts NginxOptions) *Nginx {
	t.Helper()
	if opts.Path == "" {
		opts.Path = os.Getenv(EnvNginx)
	}
	if opts.Path == "" {
		opts.Path = DefaultNginx
	}
	RequireExecutable(t, opts.Path)
	if !opts.IP.IsValid() {
		opts.IP = FreeLoopbackIP(t)
	}
	ip := opts.IP.String()
	n := &Nginx{Dir: t.TempDir(), IP: opts.IP, ProxyProtocol: !opts.WithoutProxyProtocol}
	port := func(p int) string {
		if p == 0 {
			p = FreePort(t, ip)
		}
		return net.JoinHostPort(ip, strconv.Itoa(p))
	}
	n.HTTPAddr, n.TLSAddr = port(opts.HTTPPort), port(opts.TLSPort)
	if opts.PlainListeners {
		n.PlainHTTPAddr, n.PlainTLSAddr = port(0), port(0)
	}
	hosts := opts.Hosts
	if len(hosts) == 0 {
		hosts = []string{"app.example.com", "*.example.com", "example.com", ip}
	}
	var err error
	if n.Cert, err = NewSelfSignedCert(n.Dir, hosts...); err != nil {
		t.Fatalf("harness: nginx certificate: %v", err)
	}
	for _, d := range []string{"tmp", "www/bulk"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			t.Fatalf("harness: nginx: %v", err)
		}
	}
	n.ConfigPath = filepath.Join(n.Dir, "nginx.conf")
	n.AccessLogPath = filepath.Join(n.Dir, "access.log")
	n.ErrorLogPath = filepath.Join(n.Dir, "error.log")
	var conf bytes.Buffer
	if opts.ErrorLogLevel == "" {
		opts.ErrorLogLevel = "notice"
	}
	if err := nginxConf.Execute(&conf, map[string]any{"N": n, "LogFormat": NginxLogFormat, "Workers": opts.Workers, "ErrorLogLevel": opts.ErrorLogLevel}); err != nil {
		t.Fatalf("harness: nginx config: %v", err)
	}
	if err := os.WriteFile(n.ConfigPath, conf.Bytes(), 0o644); err != nil {
		t.Fatalf("harness: nginx config: %v", err)
	}
	// -e: the error log before the config is read (default /var/log/nginx).
	name := opts.Name
	if name == "" {
		name = "nginx"
	}
	n.Proc = StartProcess(t, name, opts.Path, "-p", n.Dir, "-c", n.ConfigPath, "-e", n.ErrorLogPath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("harness: %s config %s:\n%s", name, n.ConfigPath, conf.String())
			t.Logf("harness: %s error log:\n%s", name, n.ErrorLog())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range []string{n.HTTPAddr, n.TLSAddr, n.PlainHTTPAddr, n.PlainTLSAddr} {
		if addr == "" {
			continue
		}
		if err := n.Proc.Ready(ctx, TCPProbe(addr)); err != nil {
			t.Fatalf("harness: nginx not listening on %s: %v\nerror log:\n%s", addr, err, n.ErrorLog())
		}
	}
	return n
}

// ErrorLog returns nginx's error log so far.
func (n *Nginx) ErrorLog() string {
	b, err := os.ReadFile(n.ErrorLogPath)
	if err != nil {
		return fmt.Sprintf("<read %s: %v>", n.ErrorLogPath, err)
	}
	return string(b)
}

// WaitErrorLog waits until the error log contains substr, e.g. "broken
// header", or ctx ends.
func (n *Nginx) WaitErrorLog(ctx context.Context, substr string) error {
	return Poll(ctx, func(context.Context) error {
		if !strings.Contains(n.ErrorLog(), substr) {
			return fmt.Errorf("nginx error log has no %q", substr)
		}
		return nil
	})
}

// AccessLog returns the access log's entries so far.
func (n *Nginx) AccessLog() ([]AccessLogEntry, error) {
	b, err := os.ReadFile(n.AccessLogPath)
	if err != nil {
		return nil, fmt.Errorf("nginx access log: %w", err)
	}
	return ParseAccessLog(b)
}

// ParseAccessLog parses an access log written with [NginxLogFormat], one
// entry per line.
func ParseAccessLog(b []byte) ([]AccessLogEntry, error) {
	var entries []AccessLogEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e AccessLogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return entries, fmt.Errorf("nginx access log line %q: %w", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return entries, fmt.Errorf("nginx access log: %w", err)
	}
	return entries, nil
}

// WaitAccessLog waits until an access log entry satisfies match and returns
// it. nginx writes the line after the response, so a client that has read
// its response may still have to wait a moment.
func (n *Nginx) WaitAccessLog(ctx context.Context, match func(AccessLogEntry) bool) (AccessLogEntry, error) {
	var found AccessLogEntry
	err := Poll(ctx, func(context.Context) error {
		entries, err := n.AccessLog()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if match(e) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no matching entry among %d in the nginx access log", len(entries))
	})
	return found, err
}

// BulkFile makes sure a file of size bytes exists in the web root and returns
// its URL path ("/bulk/SIZE.bin"), for bulk-transfer benchmarks. The file is
// sparse, so it costs no disk space; nginx serves zeros.
func (n *Nginx) BulkFile(size int64) (string, error) {
	name := strconv.FormatInt(size, 10) + ".bin"
	path := filepath.Join(n.Dir, "www", "bulk", name)
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		return "/bulk/" + name, nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("bulk file: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return "", fmt.Errorf("bulk file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("bulk file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("bulk file: %w", err)
	}
	// Read it once so that its pages are cached: the first sendfile of a
	// fresh sparse file runs at a fifth of the speed of later ones, which
	// would penalise whichever path a benchmark downloads it through first.
	if err := warmPageCache(path); err != nil {
		return "", fmt.Errorf("bulk file: %w", err)
	}
	return "/bulk/" + name, nil
}

func warmPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// Stop stops nginx (it is also stopped in t.Cleanup).
func (n *Nginx) Stop() error { return n.Proc.Stop() }

var nginxConf = template.Must(template.New("nginx.conf").Parse(`# Written by the coredns-hairpin test harness: nginx as ingress-nginx runs it
# with use-proxy-protocol: "true".
daemon off;
{{- if .Workers}}
master_process on;
worker_processes {{.Workers}};
user root root;
{{- else}}
master_process off;
worker_processes 1;
{{- end}}
pid {{.N.Dir}}/nginx.pid;
error_log {{.N.ErrorLogPath}} {{.ErrorLogLevel}};
worker_rlimit_nofile 65536;

events {
    worker_connections 16384;
    multi_accept on;
}

http {
    default_type text/plain;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;

    client_body_temp_path {{.N.Dir}}/tmp/client_body;
    proxy_temp_path {{.N.Dir}}/tmp/proxy;
    fastcgi_temp_path {{.N.Dir}}/tmp/fastcgi;
    uwsgi_temp_path {{.N.Dir}}/tmp/uwsgi;
    scgi_temp_path {{.N.Dir}}/tmp/scgi;

    {{.LogFormat}}
    access_log {{.N.AccessLogPath}} hairpin;

    # What ingress-nginx renders for use-proxy-protocol: "true".
    real_ip_header proxy_protocol;
    set_real_ip_from 127.0.0.0/8;
    set_real_ip_from ::1;

    ssl_certificate {{.N.Cert.CertFile}};
    ssl_certificate_key {{.N.Cert.KeyFile}};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:1m;

    server {
        listen {{.N.HTTPAddr}}{{if .N.ProxyProtocol}} proxy_protocol{{end}} default_server;
        listen {{.N.TLSAddr}} ssl{{if .N.ProxyProtocol}} proxy_protocol{{end}} default_server;
{{- if .N.PlainHTTPAddr}}
        # Without proxy_protocol, for benchmarks.
        listen {{.N.PlainHTTPAddr}} default_server;
        listen {{.N.PlainTLSAddr}} ssl default_server;
{{- end}}
        server_name _;
        root {{.N.Dir}}/www;

        location / {
            return 200 "ok host=$host client=$remote_addr port=$server_port\n";
        }
        location /bulk/ {
            default_type application/octet-stream;
            try_files $uri =404;
        }
    }
}
`))
