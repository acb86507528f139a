#!/usr/bin/env python3
"""The peer in `blegateway-bench replay`: Home Assistant's advertisement parser (bluetooth-data-tools) over the
advertising data of every report in a btsnoop corpus, timed without output. Prints one line."""
import struct
import sys
import time

from bluetooth_data_tools import parse_advertisement_data_bytes


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


def main():
    payloads = ad_payloads(sys.argv[1])
    start_cpu, start = time.process_time(), time.perf_counter()
    for ad in payloads:
        parse_advertisement_data_bytes(ad)
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start
    import bluetooth_data_tools
    version = getattr(bluetooth_data_tools, "__version__", "?")
    print("bluetooth-data-tools %s parse_advertisement_data_bytes: %d reports, %.1f ns CPU/report, %.1f ns wall/report "
          "(parsing only, no output; Python %s)" % (version, len(payloads), cpu / len(payloads) * 1e9,
                                                    wall / len(payloads) * 1e9, sys.version.split()[0]))


if __name__ == "__main__":
    main()
