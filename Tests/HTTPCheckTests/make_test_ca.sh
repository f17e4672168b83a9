#!/bin/sh
# A test certificate authority and a server certificate it signs, for the secure check's and the
# captive-portal API's tests, plus a self-signed one no one trusts.
# Usage: make_test_ca.sh DIR SAN   (SAN as openssl takes it: DNS:api.test,IP:198.18.0.1)
# Writes DIR/ca.pem, DIR/server.pem, DIR/server.key, DIR/rogue.pem, DIR/rogue.key.
set -eu
dir=$1
san=$2
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=netobserver test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=netobserver test server" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.pem -days 2 -subj "/CN=rogue" \
    -addext "subjectAltName=$san" 2>/dev/null
