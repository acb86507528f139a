#!/usr/bin/python3
"""Validates captured MQTT messages against schema/v1.

Input: a JSON-lines file, one {"topic": "...", "payload": "<utf-8 text>"} per line, as `blegateway watch --record`
writes it. Prints one line per failure and a closing 'N passed, N failed'; exits 1 on any failure.
Usage: validate_payloads.py [--operator] PREFIX MESSAGES.jsonl
With --operator, what operators publish (topics.json's operator_topics: write commands, desired configuration) is
validated too; without it, skipped.
"""
import json
import pathlib
import sys

import jsonschema

try:  # jsonschema ≥ 4.18 resolves references through `referencing`; its RefResolver is deprecated
    import referencing
    import referencing.jsonschema
except ImportError:  # Debian 12's jsonschema 4.10
    referencing = None

ROOT = pathlib.Path(__file__).resolve().parents[2] / "schema" / "v1"


def matches(filter_levels, topic_levels):
    if len(filter_levels) != len(topic_levels):
        return False
    return all(f == "+" or f == t for f, t in zip(filter_levels, topic_levels))


def main():
    args = sys.argv[1:]
    operator = args[0] == "--operator"
    if operator:
        args = args[1:]
    prefix, path = args[0], args[1]
    topics = json.loads((ROOT / "topics.json").read_text())
    table = dict(topics["topics"])
    table.update(topics["fleet_topics"])
    if operator:
        table.update({f: n for f, n in topics["operator_topics"].items() if n.endswith(".json")})
    schemas = {}
    for name in set(table.values()):
        schemas[name] = json.loads((ROOT / name).read_text())
    store = {s["$id"]: s for s in schemas.values()}
    envelope = json.loads((ROOT / "envelope.json").read_text())
    store[envelope["$id"]] = envelope
    registry = None
    if referencing is not None:
        registry = referencing.Registry().with_resources(
            (uri, referencing.Resource.from_contents(s, default_specification=referencing.jsonschema.DRAFT202012))
            for uri, s in store.items())
    passed = failed = 0
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        msg = json.loads(line)
        topic = msg["topic"]
        if not topic.startswith(prefix + "/"):
            continue
        rest = topic[len(prefix) + 1:].split("/")
        name = next((n for f, n in table.items() if matches(f.split("/"), rest)), None)
        if name is None:
            if rest[0] == "fleet" or rest[-1] == "config":
                continue  # desired config, written by operators, not the gateway
            print(f"no schema for topic {topic}")
            failed += 1
            continue
        if msg["payload"] == "":
            continue  # a cleared retained message
        schema = schemas[name]
        if registry is not None:
            validator = jsonschema.Draft202012Validator(schema, registry=registry)
        else:
            resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
            validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
        try:
            validator.validate(json.loads(msg["payload"]))
            passed += 1
        except (jsonschema.ValidationError, json.JSONDecodeError) as e:
            print(f"{topic}: {getattr(e, 'message', e)}")
            failed += 1
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or passed == 0 else 0)


if __name__ == "__main__":
    main()
