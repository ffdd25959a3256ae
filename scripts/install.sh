#!/usr/bin/env bash
# Installs nettop's build and run dependencies on Debian 12 and nettop itself
# (run as root): the binary in PREFIX/bin, the man page (`man nettop`) and
# the bash, zsh and fish completions. PREFIX defaults to /usr/local.
# NETTOP_BIN names an already built binary to install instead of building
# a release (the test suite installs its own build into a scratch PREFIX).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

if [[ $(id -u) -ne 0 ]]; then
    echo "scripts/install.sh: run as root (apt-get, and nettop needs root or CAP_BPF+CAP_PERFMON)" >&2
    exit 2
fi
prefix=${PREFIX:-/usr/local}
install_system_packages
install_rust
mount_tracefs
bin=${NETTOP_BIN:-}
if [[ -z $bin ]]; then
    cargo build --release --locked
    bin=target/release/nettop
fi
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
"$bin" --generate man "$gen" >/dev/null
"$bin" --generate completions "$gen" >/dev/null
install -D -m 0755 "$bin" "$prefix/bin/nettop"
install -D -m 0644 "$gen/nettop.1" "$prefix/share/man/man1/nettop.1"
install -D -m 0644 "$gen/nettop.bash" "$prefix/share/bash-completion/completions/nettop"
install -D -m 0644 "$gen/_nettop" "$prefix/share/zsh/site-functions/_nettop"
install -D -m 0644 "$gen/nettop.fish" "$prefix/share/fish/vendor_completions.d/nettop.fish"
# man-db finds /usr/local/share/man by itself; refresh its index so
# `man -k nettop` does too.
command -v mandb >/dev/null && mandb -q "$prefix/share/man" 2>/dev/null || true
echo ">>> installed $prefix/bin/nettop, its man page and shell completions"
