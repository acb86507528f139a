"""The ESPHome benchmark's client (blegateway-bench esphome): Home Assistant's own aioesphomeapi, subscribed to raw
advertisements for SECONDS. Each advertisement carries its send time (Unix seconds, a little-endian double after a
0xFFFF manufacturer id); prints `subscribed`, then one JSON line: how many arrived, the latency from the proxy's
`advertise` call to this callback (p50, p99, max, ms), and this process's CPU seconds.

    esphome_bench_client.py PORT KEY SECONDS
"""
import asyncio
import json
import resource
import struct
import sys
import time

from aioesphomeapi import APIClient


async def main(port: int, key: str, seconds: float) -> None:
    client = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="blegateway-bench")
    await client.connect(login=True)
    latencies = []

    def on_ads(response) -> None:
        now = time.time()
        for a in response.advertisements:
            d = a.data
            if len(d) >= 12 and d[1] == 0xFF and d[2] == 0xFF and d[3] == 0xFF:
                latencies.append(now - struct.unpack_from("<d", d, 4)[0])

    unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(on_ads)
    await client.device_info()  # a round trip: the subscription is in force once its answer came
    print("subscribed", flush=True)
    await asyncio.sleep(seconds)
    unsubscribe()
    await client.disconnect()
    latencies.sort()
    usage = resource.getrusage(resource.RUSAGE_SELF)

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2) if latencies else -1

    print(json.dumps({"received": len(latencies), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
                      "max_ms": round(latencies[-1] * 1000, 2) if latencies else -1,
                      "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3])))
