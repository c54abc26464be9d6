#!/usr/bin/env bash
# Makes a throwaway PKI for the TLS tests with openssl, in directory $1:
#   ca.pem, ca.key                 the test CA
#   server.pem, server.key         signed by it, for localhost and 127.0.0.1
#   client.pem, client.key         signed by it (a known client, for mTLS)
#   other_ca.pem, other_ca.key     another CA
#   other_client.pem, other_client.key  signed by the other CA (unknown)
# P-256 keys, valid for 2 days. Never use these outside tests.
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"

# make_ca NAME: a self-signed CA certificate NAME.pem with key NAME.key.
make_ca() {
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=memplan test $1" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# make_leaf NAME CA USAGE SAN: NAME.pem and NAME.key, signed by CA.
make_leaf() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=memplan test $1" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$3"
    if [[ -n "$4" ]]; then echo "subjectAltName=$4"; fi
  } > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
    -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

make_ca ca
make_ca other_ca
make_leaf server ca serverAuth "DNS:localhost,IP:127.0.0.1"
make_leaf client ca clientAuth ""
make_leaf other_client other_ca clientAuth ""
