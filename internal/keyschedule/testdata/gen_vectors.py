#!/usr/bin/env python3
"""Independent implementation of the elicitvault/v1 key schedule (RFC 5869
HKDF-SHA256 from the standard library's hmac). Writes vectors.json; the Go
tests check the Go implementation against that file. Run from this folder:
    python3 gen_vectors.py > vectors.json
"""
import hashlib, hmac, json, struct

def extract(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()

def expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]

def info(purpose, fields):
    b = b"elicitvault/v1 " + purpose.encode()
    for f in fields:
        fb = f.encode()
        b += struct.pack(">I", len(fb)) + fb
    return b

secrets = [
    "0123456789abcdef0123456789abcdef",  # exactly 32 bytes
    "dGhpcyBpcyBhIGRldmVsb3BtZW50IHNlY3JldCBvbmx5IQ",  # a keygen-shaped secret
    "ünïcødé sécret — UTF-8 bytes as given, at least 32",
]
cases = [
    ("token/jwe", []),
    ("token/url", []),
    ("index", []),
    ("pending", ["user-42", "session-7f3a"]),
    ("pending", ["", "session-7f3a"]),
    ("pending", ["ab", "c"]),
    ("pending", ["a", "bc"]),
]
out = []
for s in secrets:
    prk = extract(b"elicitvault/v1", s.encode())
    keys = []
    for purpose, fields in cases:
        inf = info(purpose, fields)
        keys.append({
            "purpose": purpose,
            "binding": fields,
            "info_hex": inf.hex(),
            "key_hex": expand(prk, inf, 32).hex(),
        })
    out.append({
        "secret": s,
        "prk_hex": prk.hex(),
        "key_id": expand(prk, b"elicitvault/v1 key-id", 4).hex(),
        "keys": keys,
    })
print(json.dumps({"schedule": "elicitvault/v1", "hash": "SHA-256", "vectors": out}, indent=2, ensure_ascii=False))
