#!/usr/bin/env bash
# Makes a test certificate authority and certificates for nodes and a
# coordinator (TLS between them, docs/nodes.md), with openssl:
#   scripts/make_certs.sh DIR [NODE_HOST...]
# DIR/ca.pem, DIR/node.pem + node.key, DIR/coordinator.pem + coordinator.key.
# NODE_HOST names go into the node certificate (default: localhost 127.0.0.1).
# For tests and trials: a real deployment keeps the CA key off the nodes.
set -euo pipefail
dir=${1:?usage: scripts/make_certs.sh DIR [NODE_HOST...]}
shift
hosts=("$@")
[ ${#hosts[@]} -eq 0 ] && hosts=(localhost 127.0.0.1)
mkdir -p "$dir"
cd "$dir"
san=""
for h in "${hosts[@]}"; do
  if [[ $h =~ ^[0-9.]+$ ]]; then san+="IP:$h,"; else san+="DNS:$h,"; fi
done
san=${san%,}
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout ca.key -out ca.pem -subj "/CN=tune-engine test CA" 2>/dev/null
for who in node coordinator; do
  openssl req -newkey rsa:2048 -nodes -keyout "$who.key" -out "$who.csr" -subj "/CN=tune-engine $who" 2>/dev/null
  if [ "$who" = node ]; then
    printf 'subjectAltName=%s\n' "$san" > "$who.ext"
  else
    printf 'extendedKeyUsage=clientAuth,serverAuth\n' > "$who.ext"
  fi
  openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -out "$who.pem" \
    -extfile "$who.ext" 2>/dev/null
  rm -f "$who.csr" "$who.ext"
done
chmod 600 ./*.key
echo "made $dir/ca.pem, $dir/node.pem, $dir/node.key, $dir/coordinator.pem, $dir/coordinator.key"
