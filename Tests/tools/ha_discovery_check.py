"""Judges device-discovery documents with Home Assistant's own rules (HomeAssistantClassesTests runs it under the
Home Assistant venv that make test installs).

stdin: a JSON list of {"topic": ..., "document": {...}} as the gateway publishes them. Each component goes through
its MQTT platform's DISCOVERY_SCHEMA, the schema Home Assistant applies to a discovered entity, with the device
attached as discovery attaches it; a sensor's device class is then held against Home Assistant's tables of the
state classes and units each device class takes (sensor/const.py), which Home Assistant otherwise only logs once a
state arrives. Warnings the schemas log count as problems too. Prints one line per problem and a last line
`N components checked, N problems`; exits 1 on any problem.
"""
import asyncio
import importlib
import json
import logging
import sys
import tempfile

import voluptuous as vol
from homeassistant.components.sensor.const import DEVICE_CLASS_STATE_CLASSES, DEVICE_CLASS_UNITS
from homeassistant.core import HomeAssistant
from homeassistant.helpers import frame


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


async def main():
    # The template validator wants a running Home Assistant to attach templates to: a bare one, nothing loaded.
    hass = HomeAssistant(tempfile.mkdtemp())
    frame.async_setup(hass)
    documents = json.load(sys.stdin)
    warnings = Collect()
    logging.getLogger("homeassistant").addHandler(warnings)
    problems, checked = [], 0
    for item in documents:
        document = item["document"]
        for key, component in document["cmps"].items():
            where = f"{item['topic']} {key}"
            options = dict(component)
            platform = options.pop("p")
            options["device"] = document["dev"]
            schema = importlib.import_module(f"homeassistant.components.mqtt.{platform}").DISCOVERY_SCHEMA
            before = len(warnings.records)
            checked += 1
            try:
                config = schema(options)
            except vol.Invalid as error:
                problems.append(f"{where}: {platform}: {error}")
                continue
            problems += [f"{where}: {platform}: {w}" for w in warnings.records[before:]]
            if platform != "sensor":
                continue
            device_class, state_class = config.get("device_class"), config.get("state_class")
            unit = config.get("unit_of_measurement")
            if device_class in DEVICE_CLASS_STATE_CLASSES and state_class is not None \
                    and state_class not in DEVICE_CLASS_STATE_CLASSES[device_class]:
                problems.append(f"{where}: state class {state_class} is not one device class {device_class} takes")
            if device_class in DEVICE_CLASS_UNITS and unit not in DEVICE_CLASS_UNITS[device_class]:
                problems.append(f"{where}: unit {unit!r} is not one device class {device_class} takes")
    for p in problems:
        print(p)
    print(f"{checked} components checked, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
