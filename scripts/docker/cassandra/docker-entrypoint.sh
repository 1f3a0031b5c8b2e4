#!/bin/bash
# The official image's contract: with "cassandra" first, CASSANDRA_* configure cassandra.yaml and
# cassandra-rackdc.properties and Cassandra runs as user "cassandra"; other commands run as given.
set -euo pipefail

if [ "${1:0:1}" = '-' ]; then
  set -- cassandra -f "$@"
fi

# The first address that is neither loopback nor link-local.
ip_address() {
  ip address | awk '
    $1 != "inet" { next }
    $NF == "lo" { next }
    $2 ~ /^127[.]/ { next }
    $2 ~ /^169[.]254[.]/ { next }
    { gsub(/\/.+$/, "", $2); print $2; exit }
  '
}

if [ "$1" = 'cassandra' ] && [ "$(id -u)" = '0' ]; then
  find /var/lib/cassandra /var/log/cassandra "$CASSANDRA_CONF" \! -user cassandra \
    -exec chown cassandra:cassandra '{}' +
  exec setpriv --reuid=cassandra --regid=cassandra --init-groups "$BASH_SOURCE" "$@"
fi

if [ "$1" = 'cassandra' ]; then
  : "${CASSANDRA_RPC_ADDRESS=0.0.0.0}"
  : "${CASSANDRA_LISTEN_ADDRESS=auto}"
  if [ "$CASSANDRA_LISTEN_ADDRESS" = 'auto' ]; then
    CASSANDRA_LISTEN_ADDRESS="$(ip_address)"
  fi
  : "${CASSANDRA_BROADCAST_ADDRESS=$CASSANDRA_LISTEN_ADDRESS}"
  if [ "$CASSANDRA_BROADCAST_ADDRESS" = 'auto' ]; then
    CASSANDRA_BROADCAST_ADDRESS="$(ip_address)"
  fi
  : "${CASSANDRA_BROADCAST_RPC_ADDRESS:=$CASSANDRA_BROADCAST_ADDRESS}"
  : "${CASSANDRA_SEEDS:=$CASSANDRA_BROADCAST_ADDRESS}"

  yaml="$CASSANDRA_CONF/cassandra.yaml"
  sed -i -r 's/(- seeds:).*/\1 "'"$CASSANDRA_SEEDS"'"/' "$yaml"
  for key in broadcast_address broadcast_rpc_address cluster_name endpoint_snitch \
    listen_address num_tokens rpc_address; do
    var="CASSANDRA_${key^^}"
    val="${!var:-}"
    if [ -n "$val" ]; then
      sed -i -r 's/^(# )?('"$key"':).*/\2 '"$val"'/' "$yaml"
    fi
  done
  for key in dc rack; do
    var="CASSANDRA_${key^^}"
    val="${!var:-}"
    if [ -n "$val" ]; then
      sed -i -r 's/^('"$key"'=).*/\1'"$val"'/' "$CASSANDRA_CONF/cassandra-rackdc.properties"
    fi
  done
fi

exec "$@"
