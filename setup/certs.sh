#!/usr/bin/env bash
# Makes the lab's own CA and the bench server's certificate (once; kept under $1).
# The server certificate names loopback and the lab's host names, so the network lab can use it too.
set -euo pipefail
dir=${1:?usage: certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
if [[ -s ca.pem && -s server.pem && -s server-key.pem ]]; then
  exit 0
fi
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=clientlab test CA" \
  -keyout ca-key.pem -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=clientlab bench server" \
  -keyout server-key.pem -out server.csr 2>/dev/null
cat > server.ext <<'EXT'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:*.lab.test,DNS:lab.test
EXT
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
  -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
echo "clientlab: made the lab CA and server certificate in $dir"
