"""Static shapes of every tensor of an ONNX graph once its inputs' shapes are bound.

ONNX's shape inference (with data propagation) follows ``Shape -> Gather -> Reshape`` chains,
but not every op whose output shape depends on input *values*: ``Range`` (the key positions of
a causal mask, ``arange(past + new)``), ``ConstantOfShape`` or ``Expand`` fed by computed
shapes stay unknown. Exporters emit exactly these for graphs with symbolic lengths (a decoder
with a KV cache), so where inference leaves a node without a shape, the small tensors that can
be computed from shapes and constants alone are evaluated (onnx's reference evaluator, node by
node) and written into a working copy as constants, and inference runs again. The costed graph
keeps its own nodes; only the shapes come from the folded copy.
"""

from __future__ import annotations

Shape = tuple[int, ...]

# Only small tensors are evaluated: shape arithmetic, position ranges, masks of a few thousand
# elements. Anything larger is data, not shape, and is left to inference (the cost model drops
# the data of bigger initializers: costs.load_onnx).
MAX_VALUE_ELEMENTS = 1 << 16
_MAX_ROUNDS = 6


def infer_shapes(proto, inputs: dict[str, Shape]):
    """(model with inferred shapes, the strict inference's error or None); ``proto`` is
    modified in place (its inputs' shapes bound to ``inputs``)."""
    changed = False
    for vi in proto.graph.input:
        if vi.name in inputs:
            shape = vi.type.tensor_type.shape
            changed |= [d.dim_value if d.HasField("dim_value") else None for d in shape.dim] != list(inputs[vi.name])
            shape.ClearField("dim")
            for d in inputs[vi.name]:
                shape.dim.add().dim_value = d
    if changed:  # the exporter's shapes of the other tensors are the old input's: inferred again from the new
        del proto.graph.value_info[:]
        for vi in proto.graph.output:
            vi.type.tensor_type.ClearField("shape")
    inferred, error = _infer(proto)
    if not _unshaped_outputs(inferred.graph):
        return inferred, error
    import onnx

    work = onnx.ModelProto()
    work.CopyFrom(proto)
    for _ in range(_MAX_ROUNDS):
        before = _unshaped_outputs(inferred.graph)
        folded = _fold(inferred.graph)
        if not folded or not before:
            break
        _replace_with_constants(work.graph, folded)
        inferred_work, error = _infer(work)
        if len(_unshaped_outputs(inferred_work.graph)) >= len(before):
            break
        inferred = _with_shapes_of(proto, inferred_work)
    return inferred, error


def _infer(proto):
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=True,
                                                 data_prop=True), None
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        # Exported models are not always self-consistent (a declared output type that
        # disagrees with the op): infer what can be inferred, and let a node that is left
        # without a shape fail with this message attached.
        lenient = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False,
                                                    data_prop=True)
        return lenient, str(exc).strip()


def static_shapes(graph) -> dict[str, Shape]:
    """Tensor name -> shape, for the tensors whose every dimension is known."""
    shapes = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shapes[vi.name] = tuple(d.dim_value for d in tt.shape.dim)
    for t in graph.initializer:
        shapes[t.name] = tuple(t.dims)
    return shapes


def _unshaped_outputs(graph) -> set[str]:
    shapes = static_shapes(graph)
    return {t for node in graph.node for t in node.output if t and t not in shapes}


def _fold(graph) -> dict:
    """Values of the small tensors computable from shapes and constants alone."""
    import numpy as np
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    shapes = static_shapes(graph)
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer
              if np.prod(t.dims) <= MAX_VALUE_ELEMENTS and t.data_location != t.EXTERNAL}
    folded = {}
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Shape":
            if node.input[0] not in shapes:
                continue
            start = end = None
            for a in node.attribute:
                start = a.i if a.name == "start" else start
                end = a.i if a.name == "end" else end
            outs = [np.array(shapes[node.input[0]], np.int64)[start:end]]
        else:
            ins = [t for t in node.input if t]
            if not all(t in values for t in ins):
                continue
            try:
                outs = ReferenceEvaluator(node).run(None, {t: values[t] for t in ins})
            except Exception:  # noqa: BLE001 - an op the evaluator lacks stays unfolded
                continue
        for name, value in zip(node.output, outs):
            if name and value is not None and np.size(value) <= MAX_VALUE_ELEMENTS:
                values[name] = folded[name] = np.asarray(value)
    return folded


def _replace_with_constants(graph, folded: dict) -> None:
    """Nodes whose every output was folded become Constant nodes of those values."""
    from onnx import helper, numpy_helper

    kept = []
    for node in graph.node:
        if node.output and all(t in folded for t in node.output if t) and node.op_type != "Constant":
            kept.extend(helper.make_node("Constant", [], [t], value=numpy_helper.from_array(folded[t], t))
                        for t in node.output if t)
        else:
            kept.append(node)
    graph.ClearField("node")
    graph.node.extend(kept)


def _with_shapes_of(proto, inferred_work):
    """``proto`` (its own nodes) carrying the value_info the folded copy's inference found."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(proto)
    out.graph.ClearField("value_info")
    out.graph.value_info.extend(inferred_work.graph.value_info)
    out.graph.ClearField("output")
    out.graph.output.extend(inferred_work.graph.output)  # same names, now with shapes
    return out
