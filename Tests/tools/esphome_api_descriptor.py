"""Writes the FileDescriptorSet `make esphome-proto` gives protoc: the messages of ESPHome's api.proto that the
proxy speaks (connection, device info, entities' end, Bluetooth), taken from the compiled api.proto inside the
pinned aioesphomeapi, so the numbers and fields are exactly the ones Home Assistant's client uses.

    esphome_api_descriptor.py OUT
"""
import sys

from aioesphomeapi import api_options_pb2, api_pb2
from google.protobuf import descriptor_pb2

KEPT = ("Hello", "Connect", "Disconnect", "Ping", "DeviceInfo", "ListEntitiesRequest", "ListEntitiesDoneResponse",
        "SubscribeStatesRequest", "SubscribeHomeassistantServicesRequest", "SubscribeHomeAssistantStatesRequest",
        "GetTime", "SubscribeBluetooth", "UnsubscribeBluetooth", "Bluetooth")


def main(out: str) -> None:
    api = descriptor_pb2.FileDescriptorProto()
    api_pb2.DESCRIPTOR.CopyToProto(api)
    kept = [m for m in api.message_type if m.name.startswith(KEPT)]
    names = {m.name for m in kept}
    enums = {f.type_name.lstrip(".") for m in kept for f in m.field if f.type_name} - names
    del api.message_type[:]
    api.message_type.extend(kept)
    kept_enums = [e for e in api.enum_type if e.name in enums]
    del api.enum_type[:]
    api.enum_type.extend(kept_enums)
    del api.service[:]
    api.options.Clear()
    api.options.swift_prefix = "ESPHome_"
    files = descriptor_pb2.FileDescriptorSet()
    for module in (descriptor_pb2, api_options_pb2):
        f = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(f)
        files.file.append(f)
    files.file.append(api)
    with open(out, "wb") as o:
        o.write(files.SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
