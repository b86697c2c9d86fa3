#!/usr/bin/env bash
# Starts or stops the baseline we are measured against: nginx + Debian's php8.2-fpm
# (OPcache on, pm = static) serving a document root on loopback, from config files
# written into RUN_DIR (never the system services).
#
#   nginx-fpm.sh start RUN_DIR DOC_ROOT PORT [FPM_CHILDREN] [NGINX_WORKERS] [KEEPALIVE]
#   nginx-fpm.sh stop RUN_DIR
#   nginx-fpm.sh config RUN_DIR DOC_ROOT PORT [FPM_CHILDREN] [NGINX_WORKERS] [KEEPALIVE]
#
# `start` returns once both answer; the pids are in RUN_DIR/{nginx,fpm}.pid. `config`
# only writes the files and prints the two foreground commands (one per line), for a
# harness that runs them as its own children to measure their CPU time.
#
# FastCGI keep-alive: `fastcgi_keep_conn on` alone does nothing unless the upstream has a
# connection cache (`upstream { keepalive N; }`); without one nginx opens a new FastCGI
# connection per request (KEEPALIVE=0, the old untuned set-up). The default N is
# FPM_CHILDREN / NGINX_WORKERS (at least 1): a php-fpm child serves one connection until
# nginx closes it, so the idle connections all nginx workers may cache together never
# exceed the children, and one worker's idle cache cannot hold every child while another
# worker's requests wait in the listen backlog. The cached connections' lifetime is
# nginx's default (1000 requests, 60 s): with more concurrent requests than children, a
# request that had to open a new connection waits in php-fpm's listen queue until nginx
# closes a kept one, and the default recycling bounds that wait (with a much larger
# keepalive_requests those requests are not answered during a benchmark at all, and wrk,
# which only times answered requests, shows the kept connections' latencies alone).
set -euo pipefail

cmd=${1:?usage: nginx-fpm.sh start|stop RUN_DIR ...}
run=${2:?RUN_DIR}

stop() {
  for name in nginx fpm; do
    if [[ -f "$run/$name.pid" ]]; then
      pid=$(cat "$run/$name.pid")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      rm -f "$run/$name.pid"
    fi
  done
}

case "$cmd" in
stop) stop; exit 0 ;;
start | config) ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac

root=$(cd "${3:?DOC_ROOT}" && pwd)
port=${4:?PORT}
children=${5:-4}
workers=${6:-auto}
worker_count=$workers
[[ $worker_count == auto ]] && worker_count=$(nproc)
keepalive=${7:-$((children / worker_count > 0 ? children / worker_count : 1))}
fpm=$(command -v php-fpm8.2 || echo /usr/sbin/php-fpm8.2)
[[ -x $fpm ]] || { echo "php-fpm8.2 not installed (scripts/install-test-deps.sh)" >&2; exit 1; }
mkdir -p "$run"
run=$(cd "$run" && pwd)

cat >"$run/php-fpm.conf" <<CONF
[global]
pid = $run/fpm.pid
error_log = $run/fpm-error.log
daemonize = yes

[www]
listen = $run/fpm.sock
listen.mode = 0666
pm = static
pm.max_children = $children
clear_env = no
catch_workers_output = yes
php_admin_value[error_log] = $run/php-error.log
CONF

if ((keepalive > 0)); then
  upstream="upstream php { server unix:$run/fpm.sock; keepalive $keepalive; }"
  pass="php"
else
  upstream=""
  pass="unix:$run/fpm.sock"
fi

cat >"$run/nginx.conf" <<CONF
worker_processes $workers;
$( [[ $(id -u) -eq 0 ]] && echo "user root;" )
pid $run/nginx.pid;
error_log $run/nginx-error.log warn;
daemon on;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path $run/client_body;
    proxy_temp_path $run/proxy;
    fastcgi_temp_path $run/fastcgi;
    uwsgi_temp_path $run/uwsgi;
    scgi_temp_path $run/scgi;
    client_max_body_size 1g;
    keepalive_requests 100000;
    $upstream
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root $root;
        index index.php index.html;
        location / { try_files \$uri \$uri/ /index.php\$is_args\$args; }
        location ~ [^/]\.php(/|\$) {
            fastcgi_split_path_info ^(.+?\.php)(/.*)\$;
            try_files \$fastcgi_script_name =404;
            set \$path_info \$fastcgi_path_info;
            fastcgi_param PATH_INFO \$path_info;
            fastcgi_index index.php;
            include /etc/nginx/fastcgi.conf;
            fastcgi_pass $pass;
            fastcgi_keep_conn on;
        }
    }
}
CONF

if [[ $cmd == config ]]; then
  sed -i 's/^daemonize = yes/daemonize = no/' "$run/php-fpm.conf"
  sed -i 's/^daemon on;/daemon off;/' "$run/nginx.conf"
  echo "$fpm -R -F -y $run/php-fpm.conf -c /etc/php/8.2/fpm/php.ini"
  echo "nginx -c $run/nginx.conf -p $run -e $run/nginx-error.log"
  exit 0
fi

# -R: these are throwaway instances owned by whoever runs the tests (root in CI).
"$fpm" -R -y "$run/php-fpm.conf" -c /etc/php/8.2/fpm/php.ini
nginx -c "$run/nginx.conf" -p "$run" -e "$run/nginx-error.log"

for _ in $(seq 100); do
  if [[ -S "$run/fpm.sock" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    exit 0
  fi
  sleep 0.1
done
echo "nginx + php-fpm did not come up; see $run/*.log" >&2
stop
exit 1
