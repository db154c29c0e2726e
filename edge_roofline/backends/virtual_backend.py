"""Inference on the virtual Jetson: execution time and per-layer times come from the virtual
board's physics at its current operating point; outputs are computed for real by ONNX Runtime
(``compute_outputs=True``) or returned as zero placeholders marked ``computed=False``.

Each layer is one ONNX node (the virtual board executes the cost model node by node), so the
join to the cost model is the identity. The board modules are imported lazily.

A language-model decoder with a KV cache (``roofline/decoder.py``) is timed per step: the feeds
say how many new tokens and how long a context the step has, and the board times that step's
cost (``DecoderCostModel.step``: a prefill of the prompt, a decode step at its context), so a
decode step slows as its KV cache grows, as on the device.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from edge_roofline.backends.base import (
    BackendError, InferenceBackend, LayerInfo, LayerProfile, ModelLoadError, RunResult, TensorInfo,
    nonfinite_outputs,
)
from edge_roofline.backends.onnxruntime_backend import OnnxRuntimeBackend


class VirtualBackend(InferenceBackend):
    kind = "virtual"

    def __init__(self, platform: Any = None, board: Any = None, compute_outputs: bool = True,
                 precision: str = "fp16", check_finite: bool = True) -> None:
        self.board = board if board is not None else getattr(platform, "board", None)
        self.compute_outputs, self.precision, self.check_finite = compute_outputs, precision, check_finite
        self._ort = OnnxRuntimeBackend(prepare_next_profiler=False)
        self.cost = None  # ModelCost of the loaded model (a decoder: of a decode step at context 1)
        self.decoder = None  # DecoderCostModel when the model is a decoder with a KV cache

    def _board(self):
        if self.board is None:
            try:
                from edge_roofline.virtual.board import VirtualBoard
            except ImportError as e:
                raise BackendError(f"the virtual board is not available ({e}); pass board= or "
                                   "platform= explicitly") from e
            self.board = VirtualBoard()
        return self.board

    def load(self, model: Any) -> None:
        from edge_roofline.roofline.costs import CostModelError, analyze_model
        from edge_roofline.roofline.decoder import DecoderCostModel, decoder_signature

        self._ort.load(model)  # validates the model and gives the I/O signature
        signature = decoder_signature(self._ort.model)
        try:
            if signature is not None and signature.has_kv_cache:
                self.decoder = DecoderCostModel(self._ort.model, precision=self.precision)
                self._step_cost = lru_cache(maxsize=4096)(self._decoder_step_cost)
                self.cost = self._step_cost(1, 1)
            else:
                self.decoder, self.cost = None, analyze_model(self._ort.model, precision=self.precision)
        except CostModelError as e:
            raise ModelLoadError(f"the virtual board cannot cost this model: {e}") from e

    def _decoder_step_cost(self, new_tokens: int, context: int):
        return self.decoder.step(new_tokens, context).cost

    def _cost_of(self, feeds: Mapping[str, np.ndarray]):
        """The cost of what ``feeds`` ask: the model, or a decoder's step at its length."""
        cost = self._require_cost()
        if self.decoder is None:
            return cost
        signature = self.decoder.signature
        past = signature.past_inputs[0]
        axis = next(a for (name, a), role in signature.roles.items() if name == past and role == "past")
        return self._step_cost(int(feeds[signature.token_input].shape[1]), int(feeds[past].shape[axis]))

    @property
    def model(self):
        return self._ort.model

    def _require_cost(self):
        if self.cost is None:
            raise ModelLoadError("no model loaded; call load() first")
        return self.cost

    def inputs(self) -> list[TensorInfo]:
        return self._ort.inputs()

    def outputs(self) -> list[TensorInfo]:
        return self._ort.outputs()

    def describe_layers(self) -> list[LayerInfo]:
        return [LayerInfo(l.name, l.op_type, (l.name,), self.precision)
                for l in self._require_cost().layers]

    def execution_target(self) -> tuple[str | None, str]:
        return self._board().device.key, "gpu"  # the board's physics time the GPU engine

    def _infer(self, feeds: Mapping[str, np.ndarray]):
        cost = self._cost_of(feeds)
        return self._board().run_inference(cost, self.precision, cost.batch)

    def run(self, feeds: Mapping[str, np.ndarray]) -> RunResult:
        checked = self.check_feeds(feeds)
        result = self._infer(checked)
        if not self.compute_outputs:
            outputs = {t.name: np.zeros(t.concrete_shape(), t.dtype) for t in self.outputs()}
            return RunResult(outputs, result.latency_s, computed=False)
        outputs = self._ort.run(checked).outputs
        return RunResult(outputs, result.latency_s, True,
                         nonfinite_outputs(outputs) if self.check_finite else ())

    def profile(self, feeds: Mapping[str, np.ndarray], runs: int = 1) -> LayerProfile:
        checked = self.check_feeds(feeds)
        results = [self._infer(checked) for _ in range(max(1, runs))]
        n = len(results)
        layer_times_s: dict[str, float] = {}
        for r in results:
            for name, t_s in r.per_layer_time_s.items():
                layer_times_s[name] = layer_times_s.get(name, 0.0) + t_s / n
        return LayerProfile(layer_times_s=layer_times_s,
                            total_time_s=sum(r.latency_s for r in results) / n,
                            layer_info=self.describe_layers(), runs=n, backend=self.kind)

    def close(self) -> None:
        self._ort.close()
