#!/usr/bin/env bash
# Build the two local base images the Dockerfile is built FROM when no image registry is
# reachable (as on our machines and in CI):
#
#   localhost/pathd-runtime-base:bookworm   Debian 12 minbase (debootstrap), security updates
#                                          applied, apt lists and docs stripped.
#   localhost/pathd-builder-base:<rustc>    the same rootfs plus gcc + libc6-dev (the linker)
#                                          and the host's Rust toolchain (rustc, cargo, std),
#                                          laid out like the official rust image
#                                          (CARGO_HOME=/usr/local/cargo).
#
# Usage: scripts/base-image.sh [--force] [runtime|builder|all]   (default: all)
#        scripts/base-image.sh --print-names   (prints RUNTIME=... and BUILDER=... lines)
#
# Idempotent: an image that already exists is kept unless --force is given. Needs root;
# installs buildah and debootstrap with apt-get when they are missing. Honours
# STORAGE_DRIVER (default vfs) and PATHD_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
MIRROR="${PATHD_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
# debootstrap keeps the .debs here so a forced rebuild does not download them again.
DEB_CACHE="${PATHD_DEBOOTSTRAP_CACHE:-/var/cache/pathd-debootstrap}"
RUNTIME_IMAGE="localhost/pathd-runtime-base:${SUITE}"
MIN_RUST="1.89.0"

log() { printf '[base-image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The builder image is tagged with the toolchain it carries, so a toolchain upgrade on the
# host yields a new tag instead of silently reusing an old compiler.
host_sysroot() {
    command -v rustc >/dev/null 2>&1 || die "no rustc on PATH: the builder image copies the host's toolchain (rustup's stable)"
    rustc --print sysroot
}
host_rust_version() { rustc --version | awk '{print $2}'; }
builder_image_name() { echo "localhost/pathd-builder-base:rust-$(host_rust_version)"; }

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

image_exists() { buildah inspect --type image "$1" >/dev/null 2>&1; }

ensure_tools() {
    local missing=()
    command -v buildah >/dev/null 2>&1 || missing+=(buildah)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" debian-archive-keyring ca-certificates >/dev/null
    fi
}

WORK=""
CTR=""
cleanup() {
    if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        # Never follow a bind mount left behind by an interrupted chroot step.
        for m in proc dev/pts dev sys; do umount -l "$WORK/rootfs/$m" 2>/dev/null || true; done
        rm -rf --one-file-system "$WORK"
    fi
}
trap cleanup EXIT

# Run a command inside the rootfs being prepared, with the mounts apt/dpkg expect.
in_rootfs() {
    local root="$1"; shift
    mount -t proc proc "$root/proc"
    local rc=0
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        LANG=C.UTF-8 "$@" >>"$WORK/chroot.log" 2>&1 || rc=$?
    umount "$root/proc"
    if [ "$rc" != 0 ]; then tail -n 30 "$WORK/chroot.log" >&2; log "failed in rootfs: $*"; fi
    return "$rc"
}

# Import a directory tree as a single-layer image, with the given `buildah config` options.
commit_rootfs() {
    local root="$1" name="$2"; shift 2
    CTR="$(buildah from scratch)"
    local mnt
    mnt="$(buildah mount "$CTR")"
    tar -C "$root" --numeric-owner -cf - . | tar -C "$mnt" --numeric-owner -xpf -
    buildah umount "$CTR" >/dev/null
    buildah config --os linux --arch amd64 --created-by "scripts/base-image.sh" \
        --label org.opencontainers.image.source=pathd/scripts/base-image.sh "$@" "$CTR"
    buildah commit --quiet --rm "$CTR" "$name" >/dev/null
    CTR=""
    log "committed $name"
}

make_minbase() {
    local root="$1"
    mkdir -p "$DEB_CACHE"
    log "debootstrap $SUITE (minbase) from $MIRROR"
    debootstrap --variant=minbase --cache-dir="$DEB_CACHE" "$SUITE" "$root" "$MIRROR" \
        >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
    local sec="${MIRROR%/debian}/debian-security"
    cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $sec $SUITE-security main
EOF
    # Keep later image layers small: no docs, man pages or apt caches.
    cat >"$root/etc/dpkg/dpkg.cfg.d/01-pathd-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
    cat >"$root/etc/apt/apt.conf.d/01-pathd-slim" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    log "applying $SUITE updates"
    in_rootfs "$root" apt-get update -qq
    in_rootfs "$root" apt-get -y -qq upgrade
    slim_rootfs "$root"
}

slim_rootfs() {
    local root="$1"
    in_rootfs "$root" apt-get clean
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log \
        "$root"/var/log/apt/* "$root"/tmp/* "$root"/var/tmp/*
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
    rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/*
    : >"$root/etc/resolv.conf"
}

build_runtime() {
    log "building $RUNTIME_IMAGE"
    make_minbase "$WORK/rootfs"
    commit_rootfs "$WORK/rootfs" "$RUNTIME_IMAGE" \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env LANG=C.UTF-8 --cmd /bin/bash
}

build_builder() {
    local name sysroot version
    name="$(builder_image_name)"
    sysroot="$(host_sysroot)"
    version="$(host_rust_version)"
    version_ge "$version" "$MIN_RUST" || die "host rustc $version is older than $MIN_RUST (edition 2024)"
    log "building $name from toolchain $sysroot"
    local root="$WORK/rootfs"
    if [ ! -x "$root/bin/bash" ]; then make_minbase "$root"; fi
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    in_rootfs "$root" apt-get update -qq
    in_rootfs "$root" apt-get install -y -qq gcc libc6-dev ca-certificates
    slim_rootfs "$root"
    # Only what `cargo build` needs: the cargo and rustc binaries, the compiler's shared
    # libraries and the x86_64 std; no docs, sources, clippy or rustfmt (that is 1.3 GB less).
    local dest="$root/usr/local/rust"
    mkdir -p "$dest/bin" "$root/usr/local/cargo"
    cp -a "$sysroot/bin/cargo" "$sysroot/bin/rustc" "$dest/bin/"
    cp -a "$sysroot/lib" "$dest/"
    in_rootfs "$root" /usr/local/rust/bin/rustc --version >/dev/null \
        || die "the copied toolchain does not run inside the Debian rootfs"
    commit_rootfs "$root" "$name" \
        --env PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env CARGO_HOME=/usr/local/cargo --env LANG=C.UTF-8 \
        --label "org.pathd.rust-version=$version" --cmd /bin/bash
}

main() {
    local force=0 what=all
    for arg in "$@"; do
        case "$arg" in
            --force) force=1 ;;
            --print-names) echo "RUNTIME=$RUNTIME_IMAGE"; echo "BUILDER=$(builder_image_name)"; return 0 ;;
            runtime|builder|all) what="$arg" ;;
            -h|--help) sed -n '2,19p' "$0"; return 0 ;;
            *) die "unknown argument: $arg" ;;
        esac
    done
    [ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot, buildah storage)"
    ensure_tools
    WORK="$(mktemp -d /var/tmp/pathd-base.XXXXXX)"
    mkdir -p "$WORK/rootfs"
    if [ "$what" != builder ]; then
        if [ "$force" = 1 ] || ! image_exists "$RUNTIME_IMAGE"; then build_runtime; else log "$RUNTIME_IMAGE exists"; fi
    fi
    if [ "$what" != runtime ]; then
        local b
        b="$(builder_image_name)"
        if [ "$force" = 1 ] || ! image_exists "$b"; then build_builder; else log "$b exists"; fi
    fi
}

main "$@"
