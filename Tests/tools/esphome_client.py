"""Home Assistant's ESPHome client (aioesphomeapi, pinned in Tests/tools/esphome-requirements.txt) against the
gateway's native API: Tests/BLEGatewayTests/ESPHomeProxyEndToEndTests.swift runs it and judges what it prints.

    esphome_client.py HOST PORT KEY NAME SECONDS

Prints one JSON object per line: {"device_info": …}, then {"ad": …} for every raw advertisement received in SECONDS,
then {"done": N, "list_entities": …}; or {"error": "<exception class>", "message": …} when the connection fails.
"""
import asyncio
import json
import sys

from aioesphomeapi import APIClient


async def main(host: str, port: int, key: str, name: str, seconds: float) -> None:
    client = APIClient(host, port, None, noise_psk=key or None, expected_name=name, client_info="blegateway-test")
    try:
        await client.connect(login=True)
    except Exception as e:  # the class is the verdict: InvalidEncryptionKeyAPIError for a wrong key
        print(json.dumps({"error": type(e).__name__, "message": str(e)}), flush=True)
        return
    info = await client.device_info()
    print(json.dumps({"device_info": {
        "name": info.name, "friendly_name": info.friendly_name, "mac_address": info.mac_address,
        "bluetooth_mac_address": info.bluetooth_mac_address, "esphome_version": info.esphome_version,
        "bluetooth_proxy_feature_flags": info.bluetooth_proxy_feature_flags,
        "api_version": [client.api_version.major, client.api_version.minor],
    }}), flush=True)
    entities, services = await client.list_entities_services()
    count = 0

    def on_ads(response) -> None:
        nonlocal count
        for a in response.advertisements:
            count += 1
            print(json.dumps({"ad": {"address": a.address, "address_type": a.address_type, "rssi": a.rssi,
                                     "data": a.data.hex()}}))

    unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(on_ads)
    await asyncio.sleep(seconds)
    unsubscribe()
    await client.disconnect()
    print(json.dumps({"done": count, "list_entities": [len(entities), len(services)]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])))
