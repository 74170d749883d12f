#!/usr/bin/env bash
# The shared services of a share-nothing deployment, on this machine (`make services` / `make services-stop`):
#   PostgreSQL (Debian's package)    databases `mlflow` and `prefect`
#   MLflow tracking server           on PostgreSQL, serving and proxying the artifacts over HTTP
#   Prefect server                   on PostgreSQL (asyncpg); pools cpu / gpu, the `gpu` tag limit,
#                                    the automation that marks flow runs of a lost worker Crashed (deploy/prefect_setup.py)
#   sshd                             own port, own host key, key auth only; holds the DVC remote directory
# Every port, directory and URL is set here, once, and written to $STATE/services.env, which workers source.
# All data lives under one state directory ($CORECODE_SERVICES_DIR, default .services/ in the repo, ignored by git).
# Idempotent: `start` starts what is not running; `stop` stops what is. Docs: docs/deploy.md.
#
#   deploy/services.sh start|stop|status|restart-mlflow|stop-one SERVICE|start-one SERVICE
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${CORECODE_VENV_BIN:-$REPO/.venv/bin}"
STATE="${CORECODE_SERVICES_DIR:-$REPO/.services}"
HOST="${CORECODE_SERVICES_HOST:-127.0.0.1}"
PG_PORT="${CORECODE_PG_PORT:-15432}"
MLFLOW_PORT="${CORECODE_MLFLOW_PORT:-15000}"
PREFECT_PORT="${CORECODE_PREFECT_PORT:-14200}"
SSH_PORT="${CORECODE_SSH_PORT:-12222}"
GPU_POOL_LIMIT="${CORECODE_GPU_POOL_LIMIT:-2}"   # flow runs at once in the gpu pool: the number of GPU workers
LOST_AFTER="${CORECODE_LOST_WORKER_AFTER:-90}"   # seconds without a flow run heartbeat before it counts as Crashed
PG_BIN="${CORECODE_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
SSHD="${CORECODE_SSHD:-/usr/sbin/sshd}"
DB_USER=corecode
REMOTE_DIR="$STATE/dvc-remote"
ENV_FILE="$STATE/services.env"

export DO_NOT_TRACK=true MLFLOW_DISABLE_TELEMETRY=true PREFECT_SERVER_ANALYTICS_ENABLED=false

log() { echo "services: $*" >&2; }
die() { echo "error: services: $*" >&2; exit 1; }
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
alive() { [[ -f "$STATE/run/$1.pid" ]] && kill -0 "$(cat "$STATE/run/$1.pid")" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
wait_for() {  # NAME SECONDS COMMAND...: wait until COMMAND succeeds, else show the log and fail
  local name=$1 secs=$2; shift 2
  for _ in $(seq "$((secs * 2))"); do
    "$@" && return 0
    [[ -f "$STATE/run/$name.pid" ]] && ! alive "$name" && break  # it exited: no use waiting
    sleep 0.5
  done
  tail -20 "$STATE/log/$name.log" >&2 || true
  die "$name did not come up in ${secs}s (log: $STATE/log/$name.log)"
}

install_packages() {  # Debian's postgresql and openssh-server, when missing and we may install them
  local missing=()
  [[ -n "$PG_BIN" && -x "$PG_BIN/postgres" ]] || missing+=(postgresql)
  [[ -x "$SSHD" ]] || missing+=(openssh-server)
  ((${#missing[@]})) || return 0
  [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null || die "install ${missing[*]} (e.g. sudo apt-get install ${missing[*]})"
  log "installing ${missing[*]} (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  PG_BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
}

db_password() {
  [[ -f "$STATE/secrets/db_password" ]] || { umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$STATE/secrets/db_password"; }
  cat "$STATE/secrets/db_password"
}

start_postgres() {
  local data="$STATE/postgres"
  if ! [[ -f "$data/PG_VERSION" ]]; then
    mkdir -p "$data" "$STATE/run/pg"
    if [[ $(id -u) == 0 ]]; then  # postgres refuses to run as root: its directories belong to the postgres user
      chown postgres: "$data" "$STATE/run/pg" "$STATE/log"
      runuser -u postgres -- test -x "$STATE" ||
        die "the postgres user cannot enter $STATE (a private home directory?): set CORECODE_SERVICES_DIR elsewhere"
    fi
    # the superuser only through the state directory's socket; the services log in over TCP with a password
    as_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  fi
  if as_pg "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then return 0; fi
  as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$STATE/log/postgres.log" -w -t 60 \
    -o "-p $PG_PORT -k $STATE/run/pg -c listen_addresses=$HOST" start >/dev/null
  local pw; pw="$(db_password)"
  psql_pg() { as_pg psql -h "$STATE/run/pg" -p "$PG_PORT" -U postgres -d postgres -qtA -v ON_ERROR_STOP=1 "$@"; }
  [[ "$(psql_pg -c "SELECT 1 FROM pg_roles WHERE rolname='$DB_USER'")" == 1 ]] ||
    psql_pg -c "CREATE ROLE $DB_USER LOGIN PASSWORD '$pw'" >/dev/null
  for db in mlflow prefect; do
    [[ "$(psql_pg -c "SELECT 1 FROM pg_database WHERE datname='$db'")" == 1 ]] ||
      psql_pg -c "CREATE DATABASE $db OWNER $DB_USER" >/dev/null
  done
}

start_sshd() {
  local d="$STATE/ssh"
  mkdir -p "$d" "$REMOTE_DIR" "$STATE/prefect-results" && chmod 700 "$d"  # results: the block writes no parent dirs
  [[ -f "$d/host_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C corecode-sshd -f "$d/host_ed25519"
  [[ -f "$d/client_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C corecode-dvc -f "$d/client_ed25519"
  install -m 600 "$d/client_ed25519.pub" "$d/authorized_keys"
  echo "[$HOST]:$SSH_PORT $(cut -d' ' -f1,2 "$d/host_ed25519.pub")" >"$d/known_hosts"
  # StrictModes off: the state directory may sit under a world-writable one (/tmp); the key files are ours, 0600.
  cat >"$d/sshd_config" <<EOF
Port $SSH_PORT
ListenAddress $HOST
HostKey $d/host_ed25519
PidFile $STATE/run/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
AllowTcpForwarding no
X11Forwarding no
Subsystem sftp internal-sftp
EOF
  alive sshd && return 0
  [[ $(id -u) == 0 ]] && mkdir -p /run/sshd
  "$SSHD" -f "$d/sshd_config" -E "$STATE/log/sshd.log"
  wait_for sshd 20 port_open "$SSH_PORT"
}

start_mlflow() {
  alive mlflow && return 0
  local pw; pw="$(db_password)"
  mkdir -p "$STATE/mlflow-artifacts"
  nohup "$BIN/mlflow" server --host "$HOST" --port "$MLFLOW_PORT" --workers 1 \
    --backend-store-uri "postgresql+psycopg2://$DB_USER:$pw@$HOST:$PG_PORT/mlflow" \
    --serve-artifacts --artifacts-destination "$STATE/mlflow-artifacts" \
    >>"$STATE/log/mlflow.log" 2>&1 </dev/null &
  echo $! >"$STATE/run/mlflow.pid"
  wait_for mlflow 600 curl -sf "http://$HOST:$MLFLOW_PORT/health" -o /dev/null
}

start_prefect() {
  if ! alive prefect; then
    local pw; pw="$(db_password)"
    PREFECT_API_DATABASE_CONNECTION_URL="postgresql+asyncpg://$DB_USER:$pw@$HOST:$PG_PORT/prefect" \
      PREFECT_HOME="$STATE/prefect-server" \
      nohup "$BIN/prefect" server start --host "$HOST" --port "$PREFECT_PORT" \
      >>"$STATE/log/prefect.log" 2>&1 </dev/null &
    echo $! >"$STATE/run/prefect.pid"
    wait_for prefect 600 curl -sf "http://$HOST:$PREFECT_PORT/api/health" -o /dev/null
  fi
  # pools, limits, the lost-worker automation and the results block: idempotent (deploy/prefect_setup.py)
  (set -a && source "$ENV_FILE" && "$BIN/python" "$REPO/deploy/prefect_setup.py" --gpu-pool-limit "$GPU_POOL_LIMIT" \
    --lost-after "$LOST_AFTER")
}

write_env() {
  local url="ssh://$(id -un)@$HOST:$SSH_PORT$REMOTE_DIR"
  cat >"$ENV_FILE" <<EOF
# Written by deploy/services.sh: what a worker needs to reach the shared services (source it before starting one).
CORECODE_SERVICES_DIR=$STATE
MLFLOW_TRACKING_URI=http://$HOST:$MLFLOW_PORT
# The MLflow client retries a failed request (connection refused, 5xx) with exponential backoff: 7 retries with
# factor 2 ride out a server restart of up to about 4 minutes.
MLFLOW_HTTP_REQUEST_MAX_RETRIES=7
MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR=2
MLFLOW_HTTP_REQUEST_TIMEOUT=120
PREFECT_API_URL=http://$HOST:$PREFECT_PORT/api
PREFECT_SERVER_ANALYTICS_ENABLED=false
DO_NOT_TRACK=true
MLFLOW_DISABLE_TELEMETRY=true
DVC_NO_ANALYTICS=1
# Flow runs send a heartbeat every 30 s; the automation marks a run without one for 90 s Crashed (a lost worker).
PREFECT_FLOWS_HEARTBEAT_FREQUENCY=30
# Task and flow results are persisted on the DVC remote's SSH server, where every host can read them.
PREFECT_RESULTS_PERSIST_BY_DEFAULT=true
PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK=remote-file-system/corecode-results
CORECODE_DVC_REMOTE_URL=$url
CORECODE_DVC_REMOTE_KEYFILE=$STATE/ssh/client_ed25519
CORECODE_DVC_REMOTE_KNOWN_HOSTS=$STATE/ssh/known_hosts
CORECODE_GIT_URL=${CORECODE_GIT_URL:-$REPO}
CORECODE_GIT_BRANCH=${CORECODE_GIT_BRANCH:-$(git -C "$REPO" rev-parse --abbrev-ref HEAD 2>/dev/null || echo main)}
EOF
}

stop_one() {
  case "$1" in
    postgres)
      [[ -f "$STATE/postgres/PG_VERSION" ]] && as_pg "$PG_BIN/pg_ctl" -D "$STATE/postgres" status >/dev/null 2>&1 &&
        as_pg "$PG_BIN/pg_ctl" -D "$STATE/postgres" -m fast -w stop >/dev/null
      ;;
    sshd | mlflow | prefect)
      if alive "$1"; then
        local pid; pid="$(cat "$STATE/run/$1.pid")"
        pkill -TERM -P "$pid" 2>/dev/null || true  # gunicorn/uvicorn workers of the server
        kill -TERM "$pid"
        for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -KILL "$pid" 2>/dev/null || true
      fi
      rm -f "$STATE/run/$1.pid"
      ;;
    *) die "unknown service '$1' (postgres, sshd, mlflow, prefect)" ;;
  esac
  return 0
}

start_one() {
  case "$1" in
    postgres) start_postgres ;; sshd) start_sshd ;; mlflow) start_mlflow ;; prefect) start_prefect ;;
    *) die "unknown service '$1' (postgres, sshd, mlflow, prefect)" ;;
  esac
}

status() {
  local pg=down
  [[ -f "$STATE/postgres/PG_VERSION" ]] && as_pg "$PG_BIN/pg_ctl" -D "$STATE/postgres" status >/dev/null 2>&1 && pg=up
  echo "postgres  $pg  $HOST:$PG_PORT  $STATE/postgres"
  for s in sshd mlflow prefect; do echo "$s  $(alive $s && echo up || echo down)"; done | column -t
  echo "env file: $ENV_FILE"
}

mkdir -p "$STATE"/{run,log,secrets}
chmod 711 "$STATE" && chmod 700 "$STATE/secrets"
case "${1:-start}" in
  start)
    install_packages
    write_env
    start_postgres && start_sshd && start_mlflow && start_prefect
    log "up: MLflow http://$HOST:$MLFLOW_PORT  Prefect http://$HOST:$PREFECT_PORT  DVC remote $(grep ^CORECODE_DVC_REMOTE_URL= "$ENV_FILE" | cut -d= -f2)"
    log "workers: set -a; source $ENV_FILE; set +a   (docs/deploy.md)"
    ;;
  stop) for s in prefect mlflow sshd postgres; do stop_one "$s"; done; log "stopped" ;;
  status) status ;;
  restart-mlflow) stop_one mlflow && start_mlflow ;;
  stop-one) stop_one "${2:?service}" ;;
  start-one) start_one "${2:?service}" ;;
  *) die "usage: $0 start|stop|status|restart-mlflow|stop-one SERVICE|start-one SERVICE" ;;
esac
