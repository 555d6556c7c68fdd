#!/usr/bin/env python3
"""Writes the seed corpus under tests/fuzz/corpus/<target>/: a few valid inputs
of each format (so the fuzzers start past the magic numbers) and a few broken
ones. Deterministic; rerun after a wire format changes."""
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def unique_id(family, port, addr, secret, job=0x0123456789ABCDEF):
    b = bytearray(128)
    b[0:8] = b"LOOMID01"
    struct.pack_into("<HHH", b, 8, 2, family, port)
    b[16:16 + len(addr)] = addr
    b[32:48] = secret
    struct.pack_into("<Q", b, 48, job)
    struct.pack_into("<Q", b, 120, fnv1a(bytes(b[:120])))
    return bytes(b)


def hello(rank, nranks, pid=1234, host=b"node7", job=0x55AA, nonce=bytes(range(16)),
          mac=bytes(range(32, 64))):
    b = bytearray(144)
    b[0:8] = b"LOOMBS04"
    struct.pack_into("<Q", b, 8, job)
    b[16:32] = nonce
    b[32:64] = mac
    struct.pack_into("<IIII", b, 64, rank, nranks, pid, len(host))
    b[80:80 + len(host)] = host
    return bytes(b)


def message(kind, payload=b""):
    return struct.pack("<II", kind, len(payload)) + payload


def status(busy, collective, sequence, count):
    return struct.pack("<IIQQ", busy, collective, sequence, count)


def report(state, collective, sequence, count, age):
    return struct.pack("<IIQQQ", state, collective, sequence, count, age)


def frame(kind, payload=b""):
    return struct.pack("<IIQ", kind, 0, len(payload)) + payload


def gather(blobs):
    return b"".join(struct.pack("<I", len(x)) + x for x in blobs)


def tcp_hello(tag, rank, index, sockets, slot, channels=1):
    return (b"LOOMTCP3" + struct.pack("<QIIII", tag, rank, index, channels << 16 | sockets, slot)
            + bytes(range(16)) + bytes(range(100, 132)))


def tcp_ack(tag, rank):
    return b"LOOMTCPA" + struct.pack("<QII", tag, rank, 0) + bytes(range(50, 82))


def ibv_connection(to_rank=1, layer=1, lid=7, psn=0x123456, mtu=5, gid=bytes(range(16)),
                   slots=4, slot_bytes=1 << 19):
    return (b"LOOMIBVC" + struct.pack("<HBBBBH", 1, 1, 3, mtu, layer, lid)
            + struct.pack("<QIIII", 0x1122334455667788, 0, to_rank, 0xABCDE, psn) + gid
            + struct.pack("<QIIQ", 0x7F0012345000, 0xDEADBEEF, slots, slot_bytes))


def peer(host, pid, addr, sig):
    return b"loom-peer-1\n%s\n%s\n%s\n%s" % (host, pid, addr, sig)


def seeds():
    v4 = unique_id(4, 40123, bytes([127, 0, 0, 1]), bytes(range(16)))
    v6 = unique_id(6, 5555, bytes(15) + b"\x01", bytes(16))
    yield "unique_id", {
        "ipv4": v4,
        "ipv6": v6,
        "ipv4_hex": v4.hex().encode(),
        "ipv6_hex_upper": v6.hex().upper().encode(),
        "bad_checksum": v4[:120] + bytes(8),
        "short_hex": b"abc",
        "bad_digit_hex": b"zz" + v4.hex().encode()[2:],
    }
    h = hello(1, 4)
    yield "rendezvous_messages", {
        # The first byte of each input seeds how the stream is split.
        "hello": b"\x07" + h,
        "hello_rounds_leave": b"\x03" + h + message(1, b"abc") + message(1) + message(2),
        "big_round": b"\x11" + h + message(1, bytes(range(256)) * 8),
        "bad_magic": b"\x01" + b"LOOMBS01" + h[8:],
        "long_host": b"\x05" + h[:76] + struct.pack("<I", 65) + h[80:],
        "bad_kind": b"\x09" + h + message(9),
        "leave_with_payload": b"\x02" + h + message(2, b"x"),
        "partial": b"\x04" + h[:50],
        "status_query": b"\x06" + h + message(3, status(1, 0, 41, 1024)) + message(4)
        + message(3, status(0, 0, 42, 0)),
        "status_short": b"\x02" + h + message(3, status(1, 0, 1, 1)[:20]),
        "status_bad_busy": b"\x03" + h + message(3, status(7, 0, 1, 1)),
        "query_with_payload": b"\x04" + h + message(4, b"?"),
        "revoke": b"\x05" + h + message(1, b"r") + message(5) + message(4),
        "revoke_with_payload": b"\x03" + h + message(5, b"x"),
        "revoke_on_mismatch": b"\x02" + h + message(5, b"rank 2 called #3: AllReduce of 4 float32"
                                                    b" elements (sum), but rank 1 ..."),
        "revoke_too_long": b"\x01" + h + message(5, b"m" * 4097),
        "shrink": b"\x04" + h + message(6, struct.pack("<II", 30000, 2) + struct.pack("<II", 1, 3)),
        "shrink_empty": b"\x02" + h + message(6, struct.pack("<II", 0, 0)),
        "shrink_count_past_end": b"\x03" + h + message(6, struct.pack("<II", 5, 9)),
    }
    # First byte: split seed; second: world size - 1 (mod 8).
    g = gather([b"zero", b"", b"two" * 10])
    yield "rendezvous_frames", {
        "challenge_ok": b"\x01\x02" + frame(7, bytes(range(16)))
        + frame(1, bytes(range(32)) + struct.pack("<I", 1)),
        "ok_no_host_rank": b"\x02\x02" + frame(1, bytes(32) + b"\xff\xff\xff\xff"),
        "ok_error": b"\x05\x02" + frame(1, bytes(32) + struct.pack("<I", 0))
        + frame(2, b"rank 3 (pid 9 on host h) disconnected"),
        "long_challenge": b"\x03\x01" + frame(7, bytes(17)),
        "gather3": b"\x07\x02" + frame(3, g),
        "gather_rounds": b"\x08\x00" + frame(3, gather([b"a"])) + frame(3, gather([b""])),
        "ok_with_long_proof": b"\x02\x00" + frame(1, bytes(37)),
        "reserved_set": b"\x02\x00" + struct.pack("<IIQ", 2, 1, 0),
        "huge_error": b"\x03\x00" + struct.pack("<IIQ", 2, 0, 1 << 40),
        "gather_trailing": b"\x04\x00" + frame(3, gather([b"a"]) + b"zz"),
        "states3": b"\x09\x02" + frame(4, report(1, 0, 41, 1024, 12) + report(2, 3, 42, 0, 5)
                                        + report(3, 0, 0, 0, 0)),
        "states_bad_state": b"\x03\x00" + frame(4, report(9, 0, 0, 0, 0)),
        "closing_then_error": b"\x02\x01" + frame(5) + frame(2, b"rank 1 died"),
        "states_too_long": b"\x05\x00" + frame(4, report(0, 0, 0, 0, 0) * 2),
        "revoked_between_gathers": b"\x06\x02" + frame(3, g) + frame(8, struct.pack("<I", 2))
        + frame(3, g),
        "revoked_short": b"\x02\x01" + frame(8, b"\x01\x00"),
        "revoked_on_mismatch": b"\x03\x02" + frame(8, struct.pack("<I", 1) + b"rank 1 called #0: "
                                                   b"AllReduce of 4 float32 elements (max) ..."),
        "revoked_too_long": b"\x02\x01" + frame(8, struct.pack("<I", 1) + b"m" * 4097),
        "agreed": b"\x03\x03" + frame(9, struct.pack("<I", 40123) + bytes(range(16))
                                        + struct.pack("<III", 2, 1, 3)),
        "agreed_unsorted": b"\x02\x03" + frame(9, struct.pack("<I", 1) + bytes(16)
                                                 + struct.pack("<III", 2, 3, 1)),
        "agreed_big_port": b"\x01\x01" + frame(9, struct.pack("<I", 70000) + bytes(16)
                                                 + struct.pack("<I", 0)),
    }
    yield "tcp_wire", {
        "hello": tcp_hello(0x1122334455667788, 3, 1, 4, 1 << 20),
        "hello_channels": tcp_hello(7, 0, 5, 2, 1 << 19, channels=3),
        "ack": tcp_ack(0x1122334455667788, 5) + bytes(24),
        "ack_reserved_set": b"LOOMTCPA" + struct.pack("<QII", 1, 2, 3) + bytes(56),
        "garbage": b"LOOMTCPX" + bytes(72),
    }
    yield "ibv_connection", {
        "infiniband": ibv_connection(),
        "roce": ibv_connection(layer=2, lid=0, gid=bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 7])),
        "bundle3": b"".join(ibv_connection(to_rank=r) for r in (1, 2, 3)),
        "psn_25_bits": ibv_connection(psn=1 << 24),
        "roce_zero_gid": ibv_connection(layer=2, lid=0, gid=bytes(16)),
        "truncated": ibv_connection()[:50],
    }
    yield "peer_info", {
        "valid": peer(b"node7/0c8a-boot", b"4242", b"10.0.0.7:41000", b"sig-1"),
        "empty_fields": peer(b"", b"0", b"", b""),
        "bad_pid": peer(b"h", b"12x", b"a", b"s"),
        "huge_pid": peer(b"h", b"99999999999999", b"a", b"s"),
        "four_fields": b"loom-peer-1\nh\n1\na",
        "wrong_version": b"loom-peer-9\nh\n1\na\ns",
    }


def main():
    for target, files in seeds():
        folder = os.path.join(ROOT, target)
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as out:
                out.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
