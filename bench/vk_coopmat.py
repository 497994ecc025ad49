"""What the Vulkan driver says about cooperative matrices, read through the loader with ctypes.

Usage::

    python3 bench/vk_coopmat.py            # one JSON object on stdout

For every physical device: its name, driver version and Vulkan version, whether it offers
``VK_KHR_cooperative_matrix``, the ``cooperativeMatrix`` and Vulkan-memory-model features
(wgpu exposes its cooperative-matrix feature only where the device-scope memory model is
on too), and each (M, N, K, A/B/C/result types, scope) configuration the driver lists from
``vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR``. No device is created. It needs
nothing but ``libvulkan.so.1``; bench/coop_matrix.py runs it in a child process so that a
driver fault cannot take the benchmark down with it.
"""

from __future__ import annotations

import ctypes as C
import json
import sys

# structure types and enums from the Vulkan registry (vk.xml)
APPLICATION_INFO, INSTANCE_CREATE_INFO = 0, 1
FEATURES_2 = 1000059000
MEMORY_MODEL_FEATURES = 1000211000
COOPMAT_FEATURES = 1000506000
COOPMAT_PROPERTIES = 1000506001
API_1_3 = (1 << 22) | (3 << 12)
EXTENSION = b"VK_KHR_cooperative_matrix"
COMPONENT = {
    0: "f16", 1: "f32", 2: "f64", 3: "i8", 4: "i16", 5: "i32", 6: "i64", 7: "u8", 8: "u16",
    9: "u32", 10: "u64", 1000141000: "bf16", 1000491000: "i8-packed", 1000491001: "u8-packed",
    1000491002: "e4m3", 1000491003: "e5m2",
}  # fmt: skip
SCOPE = {1: "device", 2: "workgroup", 3: "subgroup", 5: "queue-family"}
DEVICE_TYPE = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}


class AppInfo(C.Structure):
    _fields_ = [("sType", C.c_uint32), ("pNext", C.c_void_p), ("pApplicationName", C.c_char_p),
                ("applicationVersion", C.c_uint32), ("pEngineName", C.c_char_p),
                ("engineVersion", C.c_uint32), ("apiVersion", C.c_uint32)]  # fmt: skip


class InstanceInfo(C.Structure):
    _fields_ = [("sType", C.c_uint32), ("pNext", C.c_void_p), ("flags", C.c_uint32),
                ("pApplicationInfo", C.POINTER(AppInfo)), ("enabledLayerCount", C.c_uint32),
                ("ppEnabledLayerNames", C.c_void_p), ("enabledExtensionCount", C.c_uint32),
                ("ppEnabledExtensionNames", C.c_void_p)]  # fmt: skip


class ExtensionProps(C.Structure):
    _fields_ = [("extensionName", C.c_char * 256), ("specVersion", C.c_uint32)]


class CoopMatProps(C.Structure):
    _fields_ = [("sType", C.c_uint32), ("pNext", C.c_void_p), ("M", C.c_uint32),
                ("N", C.c_uint32), ("K", C.c_uint32), ("A", C.c_uint32), ("B", C.c_uint32),
                ("C", C.c_uint32), ("Result", C.c_uint32), ("saturating", C.c_uint32),
                ("scope", C.c_uint32)]  # fmt: skip


class Chained(C.Structure):
    """A features structure: its header, then up to 64 VkBool32 (more than any used here)."""

    _fields_ = [("sType", C.c_uint32), ("pNext", C.c_void_p), ("flags", C.c_uint32 * 64)]


class Features2(C.Structure):
    _fields_ = [("sType", C.c_uint32), ("pNext", C.c_void_p), ("features", C.c_uint32 * 55)]


def _version(v: int) -> str:
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def _driver_version(vendor: int, v: int) -> str:
    if vendor == 0x10DE:  # NVIDIA packs 10.8.8.6 bits
        return f"{(v >> 22) & 0x3FF}.{(v >> 14) & 0xFF}.{(v >> 6) & 0xFF}"
    return _version(v)


def _config(p: CoopMatProps) -> dict:
    name = lambda t: COMPONENT.get(t, f"type{t}")  # noqa: E731
    return {"M": p.M, "N": p.N, "K": p.K, "A": name(p.A), "B": name(p.B), "C": name(p.C),
            "result": name(p.Result), "saturating": bool(p.saturating),
            "scope": SCOPE.get(p.scope, str(p.scope))}  # fmt: skip


class Loader:
    def __init__(self):
        self.lib = C.CDLL("libvulkan.so.1")
        self.lib.vkGetInstanceProcAddr.restype = C.c_void_p
        self.lib.vkGetInstanceProcAddr.argtypes = [C.c_void_p, C.c_char_p]
        self.instance = C.c_void_p()
        app = AppInfo(APPLICATION_INFO, None, b"scellis-coopmat", 1, b"none", 1, API_1_3)
        info = InstanceInfo(INSTANCE_CREATE_INFO, None, 0, C.pointer(app), 0, None, 0, None)
        rc = self.lib.vkCreateInstance(C.byref(info), None, C.byref(self.instance))
        if rc != 0:
            raise RuntimeError(f"vkCreateInstance returned {rc}")

    def fn(self, name: str, *argtypes):
        addr = self.lib.vkGetInstanceProcAddr(self.instance, name.encode())
        if not addr:
            return None
        return C.CFUNCTYPE(C.c_int32, *argtypes)(addr)

    def devices(self) -> list:
        count = C.c_uint32()
        self.lib.vkEnumeratePhysicalDevices(self.instance, C.byref(count), None)
        handles = (C.c_void_p * count.value)()
        self.lib.vkEnumeratePhysicalDevices(self.instance, C.byref(count), handles)
        return list(handles)

    def describe(self, pd) -> dict:
        props = (C.c_uint8 * 4096)()  # VkPhysicalDeviceProperties, read by offset below
        self.lib.vkGetPhysicalDeviceProperties(C.c_void_p(pd), props)
        head = C.cast(props, C.POINTER(C.c_uint32 * 5)).contents
        api, driver, vendor, device_id, kind = list(head)
        name = bytes(props[20 : 20 + 256]).split(b"\0", 1)[0].decode(errors="replace")
        out = {"name": name, "vendor_id": hex(vendor), "device_id": hex(device_id),
               "type": DEVICE_TYPE.get(kind, str(kind)), "api_version": _version(api),
               "driver_version": _driver_version(vendor, driver)}  # fmt: skip
        out["has_extension"] = EXTENSION.decode() in self.extensions(pd)
        out.update(self.features(pd, api))
        out["configs"] = self.configs(pd) if out["has_extension"] else []
        return out

    def extensions(self, pd) -> set[str]:
        count = C.c_uint32()
        self.lib.vkEnumerateDeviceExtensionProperties(C.c_void_p(pd), None, C.byref(count), None)
        exts = (ExtensionProps * count.value)()
        self.lib.vkEnumerateDeviceExtensionProperties(C.c_void_p(pd), None, C.byref(count), exts)
        return {e.extensionName.decode(errors="replace") for e in exts}

    def features(self, pd, api: int) -> dict:
        if api < (1 << 22) | (1 << 12):  # features2 is core from Vulkan 1.1
            return {}
        coop = Chained(COOPMAT_FEATURES, None)
        model = Chained(MEMORY_MODEL_FEATURES, C.cast(C.pointer(coop), C.c_void_p))
        f2 = Features2(FEATURES_2, C.cast(C.pointer(model), C.c_void_p))
        self.lib.vkGetPhysicalDeviceFeatures2(C.c_void_p(pd), C.byref(f2))
        return {"cooperative_matrix_feature": bool(coop.flags[0]),
                "vulkan_memory_model": bool(model.flags[0]),
                "vulkan_memory_model_device_scope": bool(model.flags[1])}  # fmt: skip

    def configs(self, pd) -> list[dict]:
        get = self.fn("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", C.c_void_p,
                      C.POINTER(C.c_uint32), C.POINTER(CoopMatProps))  # fmt: skip
        if get is None:
            return []
        count = C.c_uint32()
        get(pd, C.byref(count), None)
        props = (CoopMatProps * count.value)()
        for p in props:
            p.sType = COOPMAT_PROPERTIES
        get(pd, C.byref(count), props)
        return [_config(p) for p in props[: count.value]]


def probe() -> dict:
    try:
        loader = Loader()
    except (OSError, RuntimeError) as e:
        return {"error": f"no Vulkan loader or instance: {e}"}
    return {"devices": [loader.describe(pd) for pd in loader.devices()]}


if __name__ == "__main__":
    json.dump(probe(), sys.stdout, indent=1)
    print()
