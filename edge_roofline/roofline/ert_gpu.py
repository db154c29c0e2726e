"""ERT on an NVIDIA GPU (pycuda): one generated CUDA kernel per (precision, k), timed with CUDA
events, swept and fitted as ``ert`` does on the CPU. It uses CUDA-core FMAs, so on Tensor-core
precisions the measured FLOP peak is the CUDA-core one; the bandwidths are what the sweep is for.
pycuda and a CUDA device are needed only when a measurement runs.
"""

from __future__ import annotations

import time

from edge_roofline.roofline.ert import (KIB, MIB, ErtError, ErtPoint, ErtResult, GpuUnavailableError, _slug,
                                        fit_ceilings, working_set_sizes)

# precision -> (C type of one element, values per element, FLOPs per multiply-add
# instruction, the multiply-add expression, bytes per element)
_GPU_TYPES = {
    "fp64": ("double", 1, 2, "b = fma(b, alpha, c);", 8),
    "fp32": ("float", 1, 2, "b = fmaf(b, alpha, c);", 4),
    "fp16": ("__half2", 2, 4, "b = __hfma2(b, alpha, c);", 4),
}


def gpu_kernel_name(precision: str, flops_per_element: int) -> str:
    return f"ert_{precision}_k{flops_per_element}"


def gpu_kernel_source(precision: str, flops_per_element: int) -> str:
    """CUDA C of the ERT kernel: grid-stride over ``n`` elements, ``trials`` passes, each
    element updated with ``flops_per_element`` FLOPs (per value) of dependent multiply-adds."""
    if precision not in _GPU_TYPES:
        raise ErtError(f"no GPU ERT kernel for {precision!r}; use one of {sorted(_GPU_TYPES)}")
    ctype, lanes, flops_per_fma, fma, _ = _GPU_TYPES[precision]
    per_value_fma = 2  # FLOPs of one multiply-add on one value
    if flops_per_element < per_value_fma or flops_per_element % per_value_fma:
        raise ErtError("FLOPs per element must be a positive even number")
    fmas = flops_per_element // per_value_fma
    body = "\n".join(f"      {fma}" for _ in range(fmas))
    header = "#include <cuda_fp16.h>\n" if precision == "fp16" else ""
    return f"""{header}extern "C" __global__ void {gpu_kernel_name(precision, flops_per_element)}(
    {ctype} *data, long long n, int trials, {ctype} alpha) {{
  // {fmas} dependent multiply-adds per element ({lanes} value(s), {flops_per_fma} FLOPs each)
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (int t = 0; t < trials; ++t) {{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
      {ctype} b = data[i];
      const {ctype} c = b;
{body}
      data[i] = b;
    }}
  }}
}}
"""


def gpu_point(precision: str, working_set_bytes: int, flops_per_element: int, trials: int,
              seconds: float) -> ErtPoint:
    """The point a timed GPU launch gives: ``flops_per_element`` counts per value, an
    element of ``__half2`` holds two values."""
    _, lanes, _, _, elem_bytes = _GPU_TYPES[precision]
    elements = working_set_bytes // elem_bytes
    return ErtPoint(working_set_bytes=working_set_bytes, flops_per_element=flops_per_element,
                    seconds=seconds, bytes_moved=2.0 * elements * elem_bytes * trials,
                    flops=float(flops_per_element) * elements * lanes * trials)


def _import_pycuda():
    try:
        import pycuda.driver as cuda
        from pycuda.compiler import SourceModule
    except ImportError as exc:
        raise GpuUnavailableError(
            "GPU ceilings need pycuda and an NVIDIA driver: pip install pycuda "
            f"(with the CUDA toolkit on PATH) ({exc})") from exc
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise GpuUnavailableError("pycuda found no CUDA device")
    except cuda.Error as exc:
        raise GpuUnavailableError(f"CUDA driver error: {exc}") from exc
    return cuda, SourceModule


def measure_gpu_ceilings(precision: str = "fp32", quick: bool = True, *, device_index: int = 0,
                         label: str | None = None) -> ErtResult:
    """Ceilings of an NVIDIA GPU through pycuda (raises ``GpuUnavailableError`` without it)."""
    import numpy as np

    cuda, SourceModule = _import_pycuda()
    device = cuda.Device(device_index)
    context = device.make_context()
    try:
        attrs = device.get_attributes()
        sms = attrs[cuda.device_attribute.MULTIPROCESSOR_COUNT]
        l2 = attrs[cuda.device_attribute.L2_CACHE_SIZE]
        # The L1/shared carve-out per SM bounds what the L1 level can hold across the GPU.
        l1 = attrs[cuda.device_attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] * sms
        cache = {"l1": l1, "l2": l2}
        ks = (2, 8, 32) if quick else (2, 4, 8, 16, 32, 64, 128, 256)
        sizes = working_set_sizes(max(l1 // 8, 64 * KIB), max(16 * l2, 256 * MIB),
                                  per_octave=1 if quick else 2)
        source = "\n".join(gpu_kernel_source(precision, k) for k in ks)
        module = SourceModule(source, no_extern_c=True)
        ctype = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float32}[precision]
        alpha = ctype(1.0) if precision != "fp16" else np.frombuffer(
            np.array([1.0, 1.0], np.float16).tobytes(), np.float32)[0]  # a __half2 of ones
        buffer = cuda.mem_alloc(max(sizes))
        cuda.memset_d8(buffer, 0, max(sizes))
        block = 256
        grid = sms * 32
        start, stop = cuda.Event(), cuda.Event()
        points = []
        for size in sizes:
            elements = size // _GPU_TYPES[precision][4]
            trials = max(1, (512 * MIB if not quick else 128 * MIB) // (2 * size))
            for k in ks:
                kernel = module.get_function(gpu_kernel_name(precision, k))
                args = (buffer, np.int64(elements), np.int32(trials), alpha)
                kernel(*args, block=(block, 1, 1), grid=(grid, 1))  # warm-up
                start.record()
                kernel(*args, block=(block, 1, 1), grid=(grid, 1))
                stop.record()
                stop.synchronize()
                points.append(gpu_point(precision, size, k, trials, stop.time_since(start) / 1e3))
        launch_s = _gpu_launch_overhead_s(cuda, module.get_function(gpu_kernel_name(precision, ks[0])),
                                          buffer, alpha)
        key, point = _gpu_identity(cuda, device)
        ceilings = fit_ceilings(points, cache, engine="gpu", precision=precision,
                                label=label or f"{device.name()} {point} gpu {precision} (measured)",
                                layer_overhead_s=launch_s)
        return ErtResult(points=tuple(points), ceilings=ceilings, cache_bytes=cache,
                         device_key=key, operating_point=point)
    finally:
        context.pop()


def _gpu_identity(cuda, device) -> tuple[str, str]:
    """(device key, operating point): the GPU's name; its max clock (the operating point a
    discrete GPU's application clocks or a Jetson's devfreq cap sets)."""
    clock_khz = device.get_attribute(cuda.device_attribute.CLOCK_RATE)
    return f"gpu-{_slug(device.name())}", f"{clock_khz // 1000}MHz"


def gpu_identity(device_index: int = 0) -> tuple[str, str]:
    """(device key, operating point) of a CUDA GPU for the ceilings cache."""
    cuda, _ = _import_pycuda()
    return _gpu_identity(cuda, cuda.Device(device_index))


def _gpu_launch_overhead_s(cuda, kernel, buffer, alpha, launches: int = 200) -> float:
    """Wall time per back-to-back launch of a one-element kernel: the per-layer term."""
    import numpy as np

    args = (buffer, np.int64(1), np.int32(1), alpha)
    kernel(*args, block=(1, 1, 1), grid=(1, 1))
    cuda.Context.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        kernel(*args, block=(1, 1, 1), grid=(1, 1))
    cuda.Context.synchronize()
    return (time.perf_counter() - start) / launches
