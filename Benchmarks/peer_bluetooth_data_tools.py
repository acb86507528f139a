#!/usr/bin/env python3
"""The peer in `blegateway-bench replay`: Home Assistant's advertisement parser (bluetooth-data-tools) over the
advertising data of every report in a btsnoop corpus, timed without output. Prints one line."""
import struct
import sys
import time

from bluetooth_data_tools import parse_advertisement_data_bytes

try:  # the parser without its LRU cache: the corpus repeats its 71,738 real reports, a cache would hide the work
    from bluetooth_data_tools.gap import _uncached_parse_advertisement_bytes as uncached
except ImportError:  # pragma: no cover - an older release
    uncached = None


def ad_payloads(path):
    """The AD bytes of each LE (Extended) Advertising Report, by the Core spec's layouts (Vol 4, Part E, 7.7.65)."""
    data = open(path, "rb").read()
    pos, out = 16, []
    while pos + 24 <= len(data):
        incl = struct.unpack_from(">I", data, pos + 4)[0]
        pkt = data[pos + 24:pos + 24 + incl]
        pos += 24 + incl
        if len(pkt) < 4 or pkt[0] != 0x04 or pkt[1] != 0x3E:
            continue
        sub, p = pkt[3], pkt[4:]
        n, i = p[0], 1
        for _ in range(n):
            if sub == 0x02:
                length = p[i + 8]
                out.append(bytes(p[i + 9:i + 9 + length]))
                i += 9 + length + 1
            elif sub == 0x0D:
                length = p[i + 23]
                out.append(bytes(p[i + 24:i + 24 + length]))
                i += 24 + length
    return out


def timed(parse, payloads):
    start_cpu, start = time.process_time(), time.perf_counter()
    for ad in payloads:
        parse(ad)
    return (time.process_time() - start_cpu) / len(payloads) * 1e9, (time.perf_counter() - start) / len(payloads) * 1e9


def main():
    payloads = ad_payloads(sys.argv[1])
    from importlib.metadata import version
    parts = []
    if uncached is not None:
        cpu, wall = timed(uncached, payloads)
        parts.append("uncached %.1f ns CPU/report (%.1f wall)" % (cpu, wall))
    cpu, wall = timed(parse_advertisement_data_bytes, payloads)
    parts.append("with its LRU cache %.1f ns CPU/report (%.1f wall)" % (cpu, wall))
    print("bluetooth-data-tools %s, %d reports, parsing only, no output (Python %s): %s"
          % (version("bluetooth-data-tools"), len(payloads), sys.version.split()[0], "; ".join(parts)))


if __name__ == "__main__":
    main()
