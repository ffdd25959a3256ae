#!/usr/bin/env bash
# Builds nettop's container image from the release build, with no pull
# from any registry: `buildah from scratch`, then the stripped binary and
# exactly the shared libraries it loads (as ldd resolves them on this
# build host, the dynamic loader included), a minimal nsswitch.conf, and
# empty mount points for the node's files the DaemonSet mounts
# (packaging/k8s/README.md). The entry point is /usr/bin/nettop.
#
#   scripts/image.sh [--binary PATH] [--tag REF] [--archive FILE]
#
# --binary  an already built release binary (default: cargo build --release)
# --tag     the image reference (default: localhost/nettop:<version>)
# --archive also write the image as an OCI archive (podman load -i FILE)
#
# Prints the image reference on stdout. Needs buildah (root).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
bin= tag="localhost/nettop:$version" archive=
while (($#)); do
    case $1 in
        --binary) bin=$2; shift 2 ;;
        --tag) tag=$2; shift 2 ;;
        --archive) archive=$2; shift 2 ;;
        *) echo "scripts/image.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v buildah >/dev/null || {
    echo "scripts/image.sh: buildah is missing (apt-get install buildah)" >&2
    exit 2
}
if [[ -z $bin ]]; then
    cargo build --release --locked --bin nettop >&2
    bin="${CARGO_TARGET_DIR:-target}/release/nettop"
fi
[[ -x $bin ]] || { echo "scripts/image.sh: $bin is not an executable" >&2; exit 2; }

stage=$(mktemp -d /tmp/nettop-image.XXXXXX)
ctr=
cleanup() {
    [[ -n $ctr ]] && buildah rm "$ctr" >/dev/null 2>&1
    rm -rf "$stage"
}
trap cleanup EXIT

root=$stage/root
mkdir -p "$root/usr/bin" "$root/etc" "$root/var/cache/nettop" "$root/var/log/pods" \
    "$root/var/log/containers" "$root/tmp"
# Line tables stay in the .deb's dbgsym package; the image ships none.
objcopy --strip-debug "$bin" "$root/usr/bin/nettop"
# Every library ldd resolves (transitively), at the path the loader finds
# it, symlinks followed; the loader itself from the PT_INTERP line.
while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done < <(ldd "$root/usr/bin/nettop" | grep -o '/[^ ]*' | sort -u)
if ldd "$root/usr/bin/nettop" | grep -q 'not found'; then
    echo "scripts/image.sh: a library of $bin is not found:" >&2
    ldd "$root/usr/bin/nettop" >&2
    exit 1
fi
# glibc's own files module answers getpwuid from /etc/passwd, which the
# DaemonSet mounts from the node (or nettop reads under /proc/1/root).
printf 'passwd: files\ngroup: files\n' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [[ $revision != unknown ]] && ! git diff --quiet HEAD 2>/dev/null; then
    revision="$revision-dirty"
fi
description=$(sed -n 's/^description = "\(.*\)"$/\1/p' Cargo.toml | head -1)
license=$(sed -n 's/^license = "\(.*\)"$/\1/p' Cargo.toml | head -1)

ctr=$(buildah from scratch)
buildah copy --quiet "$ctr" "$root/" / >/dev/null
buildah config \
    --entrypoint '["/usr/bin/nettop"]' \
    --cmd '["--serve", "0.0.0.0:9867", "-d", "10"]' \
    --env PATH=/usr/bin \
    --env NETTOP_CACHE_DIR=/var/cache/nettop \
    --port 9867/tcp \
    --workingdir / \
    --label org.opencontainers.image.title=nettop \
    --label "org.opencontainers.image.description=$description" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.created=$created" \
    --label org.opencontainers.image.source=https://github.com/nettop/nettop \
    --label org.opencontainers.image.url=https://github.com/nettop/nettop \
    --label org.opencontainers.image.documentation=https://github.com/nettop/nettop/blob/main/packaging/README.md \
    --label "org.opencontainers.image.licenses=$license" \
    --label org.opencontainers.image.vendor="nettop developers" \
    --label org.opencontainers.image.base.name=scratch \
    "$ctr"
buildah commit --quiet --rm --timestamp "$epoch" "$ctr" "$tag" >/dev/null
ctr=
if [[ -n $archive ]]; then
    rm -f "$archive"
    podman save --quiet --format oci-archive -o "$archive" "$tag"
fi
echo "$tag"
