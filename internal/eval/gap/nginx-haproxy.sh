# nginx-haproxy.sh: nginx -> HAProxy in front of two Hypernova workers as
# the suite's Hypernova scenario runs them, sourced by roll-ab.sh and
# idle-ab.sh, which set work (a directory) and pids (the PIDs to end).

# start_nginx_haproxy NGINX_PORT HAPROXY_PORT WORKER_PORT...: HAProxy at
# HAPROXY_PORT (leastconn, maxconn 1 a worker, a 500 ms queue, health
# checks POST /batch every second, fall 2 rise 1, redispatch) over the
# workers, nginx at NGINX_PORT in front of it, both on every CPU; their
# configs and logs in $work, their PIDs added to pids.
start_nginx_haproxy() {
	local nport=$1 hport=$2 w i=0
	shift 2
	{
		cat <<Y
global
  maxconn 8000
defaults
  mode http
  option abortonclose
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 65s
  timeout queue 500ms
frontend fe
  bind 127.0.0.1:$hport
  default_backend workers
backend workers
  balance leastconn
  option redispatch
  retries 2
  option httpchk
  http-check send meth POST uri /batch hdr Content-Type application/json body '{"page":{"name":"Page","data":{"page":1,"items":1}}}'
  http-check expect status 200
Y
		for w; do
			echo "  server w$i 127.0.0.1:$w maxconn 1 check inter 1s fall 2 rise 1"
			i=$((i + 1))
		done
	} >"$work/haproxy.cfg"
	mkdir -p "$work/nginx"
	cat >"$work/nginx.conf" <<Y
daemon off;
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_timeout 65s;
  keepalive_requests 100000;
  upstream haproxy { server 127.0.0.1:$hport; keepalive 256; }
  server {
    listen 127.0.0.1:$nport backlog=4096;
    location / {
      proxy_pass http://haproxy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_read_timeout 30s;
    }
  }
}
Y
	haproxy -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
	pids+=($!)
	nginx -c "$work/nginx.conf" -e "$work/nginx/error.log" >"$work/nginx.log" 2>&1 &
	pids+=($!)
}
