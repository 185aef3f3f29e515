#!/usr/bin/env bash
# mkdeb.sh OUTDIR - builds the Debian package shortd_VERSION_ARCH.deb into
# OUTDIR from the hardened build (make deb runs it after make HARDEN=1), with
# dpkg-deb alone: the files are `make install PREFIX=/usr` into a staging
# tree, the maintainer scripts are packaging/deb/, and Depends comes from the
# shared libraries the binary links (dpkg-shlibdeps).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-build/deb}
version=$(cat VERSION)
arch=$(dpkg --print-architecture)
commit=$(build/hardened/shortd --version | sed -n 's/.*(\(.*\))$/\1/p')
root=$out/root
# Who made the package: Debian's DEBFULLNAME and DEBEMAIL, else git's user.
name=${DEBFULLNAME:-$(git config user.name 2>/dev/null || echo "shortd developers")}
email=${DEBEMAIL:-$(git config user.email 2>/dev/null || echo "shortd@localhost")}
maintainer="$name <$email>"
rm -rf "$root" "$out/shlibs"
mkdir -p "$root/DEBIAN"

make --no-print-directory install HARDEN=1 DESTDIR="$PWD/$root" PREFIX=/usr \
    UNITDIR=/lib/systemd/system >/dev/null

doc=$root/usr/share/doc/shortd
# Debian's layout: man pages and the changelog compressed, the licence as
# debian/copyright (the full text is in /usr/share/common-licenses).
gzip -9n "$root/usr/share/man/man1/shortd.1"
rm "$doc/LICENSE"
sed "s/@COMMIT@/$commit/" packaging/deb/copyright.in >"$doc/copyright"
{
    printf 'shortd (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Built from commit %s.\n\n' "$commit"
    printf ' -- %s  %s\n' "$maintainer" \
        "$(date -R -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n >"$doc/changelog.gz"
# The symbols stay in the build tree (build/hardened/shortd), as Debian's own
# packages keep them in a -dbgsym package.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/shortd"

# dpkg-shlibdeps reads debian/control from where it runs.
mkdir -p "$out/shlibs/debian"
printf 'Source: shortd\n\nPackage: shortd\nArchitecture: any\n' >"$out/shlibs/debian/control"
depends=$(cd "$out/shlibs" && dpkg-shlibdeps -O "$PWD/../root/usr/bin/shortd" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no libraries" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    -e "s/@DEPENDS@/$depends/" -e "s|@MAINTAINER@|$maintainer|" packaging/deb/control.in >"$root/DEBIAN/control"
echo /etc/shortd/shortd.conf >"$root/DEBIAN/conffiles"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
    xargs -0 md5sum) >"$root/DEBIAN/md5sums"

# Modes as Debian wants them, whatever the umask of the build.
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" "$root/lib" "$root/etc" -type f -exec chmod 0644 {} +

deb=$out/shortd_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
