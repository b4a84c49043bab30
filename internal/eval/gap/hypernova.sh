# hypernova.sh: what roll-ab.sh and idle-ab.sh share, sourced by them once
# they have set root (the repository), work (a directory) and pids (the
# PIDs to end): a job for Hypernova's POST /batch, sluice supervising two
# Hypernova workers, and nginx -> HAProxy in front of two workers as the
# suite's Hypernova scenario runs them.

printf '{"page":{"name":"Page","data":{"page":1,"items":23}}}' >"$work/job.json"

# start_supervised NAME BINARY PORT [ROLL]: BINARY serve at PORT (its admin
# at PORT+1) supervising two Hypernova workers (NODE_ENV=production, every
# other key its default, workers.roll ROLL if given); config and log
# $work/sluice-NAME.*, its PID added to pids.
start_supervised() {
	local name=$1 bin=$2 port=$3 roll=${4:-}
	{
		cat <<Y
server: {listen: 127.0.0.1:$port}
admin: {listen: 127.0.0.1:$((port + 1))}
workers:
  command: ["node", "$root/internal/eval/hypernova/worker.js"]
  count: 2
  env: {NODE_ENV: production}
Y
		if [ -n "$roll" ]; then echo "  roll: $roll"; fi
	} >"$work/sluice-$name.yaml"
	"$bin" serve -c "$work/sluice-$name.yaml" >"$work/sluice-$name.log" 2>&1 &
	pids+=($!)
}

# ready ADMIN_PORT: how many of that sluice's workers are ready.
ready() {
	curl -s "127.0.0.1:$1/stats" | python3 -c 'import json,sys; print(sum(w["state"] == "ready" for w in json.load(sys.stdin)["supervisor"]["workers"]))' 2>/dev/null || echo 0
}

# await ADMIN_PORT: until that sluice's two workers are ready, or 20 s.
await() {
	for _ in $(seq 100); do
		[ "$(ready "$1")" = 2 ] && return
		sleep 0.2
	done
}

# renders PORT: until what listens at PORT renders the job, or 20 s.
renders() {
	for _ in $(seq 200); do
		curl -sf -o /dev/null -X POST -H "Content-Type: application/json" --data "@$work/job.json" "127.0.0.1:$1/batch" && return
		sleep 0.1
	done
}

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
