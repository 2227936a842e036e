# hydra: verify the trust roots of NVIDIA's repositories before apt trusts them. Reads an OpenPGP keyring
# (binary, or ASCII-armored), or the keyring inside a .deb (without installing it), computes the
# fingerprint of every primary key (RFC 4880 section 12.2: SHA-1 over 0x99, the packet's length and the
# public-key packet) and fails unless each is one of the expected fingerprints. Needs Python 3 and, for a
# .deb, dpkg-deb; nothing else (no gpg).
#
#   pgp_fingerprints.py key FILE FINGERPRINT...
#   pgp_fingerprints.py deb FILE MEMBER FINGERPRINT...     MEMBER: the keyring's path inside the package
import base64
import hashlib
import io
import subprocess
import sys
import tarfile


def dearmor(data):
    text = data.decode("ascii", "replace")
    if "-----BEGIN PGP PUBLIC KEY BLOCK-----" not in text:
        return data
    body = text.split("-----BEGIN PGP PUBLIC KEY BLOCK-----", 1)[1].split("-----END PGP PUBLIC KEY BLOCK-----", 1)[0]
    lines = body.strip().splitlines()
    # Armor headers end at the first empty line (when there are any).
    if any(not ln.strip() for ln in lines):
        lines = lines[[i for i, ln in enumerate(lines) if not ln.strip()][0] + 1:]
    return base64.b64decode("".join(ln.strip() for ln in lines if ln.strip() and not ln.startswith("=")))


def packets(data):
    i = 0
    while i < len(data):
        b = data[i]
        if not b & 0x80:
            raise ValueError("not an OpenPGP packet at byte %d" % i)
        if b & 0x40:  # new format
            tag, o1 = b & 0x3F, data[i + 1]
            if o1 < 192:
                n, h = o1, 2
            elif o1 < 224:
                n, h = ((o1 - 192) << 8) + data[i + 2] + 192, 3
            elif o1 == 255:
                n, h = int.from_bytes(data[i + 2:i + 6], "big"), 6
            else:
                raise ValueError("partial body lengths are not used by keys")
        else:
            tag, lt = (b >> 2) & 0x0F, b & 3
            if lt == 3:
                raise ValueError("indeterminate packet length")
            size = 1 << lt
            n, h = int.from_bytes(data[i + 1:i + 1 + size], "big"), 1 + size
        yield tag, data[i + h:i + h + n]
        i += h + n


def fingerprints(data):
    out = []
    for tag, body in packets(dearmor(data)):
        if tag == 6:  # a primary public key
            if body[0] != 4:
                raise ValueError("a version %d key (only version 4 keys are expected here)" % body[0])
            out.append(hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper())
    return out


def main(argv):
    kind, path = argv[0], argv[1]
    if kind == "deb":
        member, expected = argv[2].lstrip("./"), argv[3:]
        tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=120)
        if tar.returncode != 0:
            sys.exit("%s is not a Debian package: %s" % (path, tar.stderr.decode("utf-8", "replace").strip()))
        with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
            names = {m.name.lstrip("./"): m for m in t.getmembers()}
            if member not in names:
                sys.exit("%s holds no %s" % (path, member))
            data = t.extractfile(names[member]).read()
    else:
        expected = argv[2:]
        with open(path, "rb") as f:
            data = f.read()
    expected = [e.replace(" ", "").upper() for e in expected]
    try:
        got = fingerprints(data)
    except (ValueError, IndexError) as e:
        sys.exit("%s: not an OpenPGP keyring: %s" % (path, e))
    if not got:
        sys.exit("%s holds no OpenPGP key" % path)
    wrong = [g for g in got if g not in expected]
    if wrong:
        sys.exit("%s holds key(s) %s, not the expected %s: refusing to trust it" % (path, ", ".join(wrong), ", ".join(expected)))
    print(" ".join(got))


main(sys.argv[1:])
