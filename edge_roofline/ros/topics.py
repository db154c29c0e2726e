"""Topic and service names of the suite and their types: one table the nodes, the Foxglove
bridge, the recorder and the docs share. Relative names resolve in the nodes' namespace."""

POWER_TELEMETRY = "power/telemetry"
INFERENCE_STATS = "inference/stats"
ROOFLINE_REPORT = "inference/roofline"
INFERENCE_OUTPUT = "inference/output"
GOVERNOR_STATE = "governor/state"
ROOFLINE_CHART = "inference/roofline_chart/compressed"
DIAGNOSTICS = "/diagnostics"
# A language model's (the generation node's; the suite starts it in the namespace LLM_NAMESPACE,
# where its inference/stats and inference/roofline are its own)
GENERATION_REQUEST = "generation/request"
GENERATION_TOKENS = "generation/tokens"
GENERATION_STATS = "generation/stats"
LLM_NAMESPACE = "llm"

TYPES = {
    POWER_TELEMETRY: "edge_roofline/msg/PowerTelemetry",
    INFERENCE_STATS: "edge_roofline/msg/InferenceStats",
    ROOFLINE_REPORT: "edge_roofline/msg/RooflineReport",
    INFERENCE_OUTPUT: "edge_roofline/msg/TensorArray",
    GOVERNOR_STATE: "edge_roofline/msg/GovernorState",
    ROOFLINE_CHART: "sensor_msgs/msg/CompressedImage",
    DIAGNOSTICS: "diagnostic_msgs/msg/DiagnosticArray",
}
GENERATION_TYPES = {
    GENERATION_REQUEST: "edge_roofline/msg/GenerationRequest",
    GENERATION_TOKENS: "edge_roofline/msg/GeneratedToken",
    GENERATION_STATS: "edge_roofline/msg/GenerationStats",
}
# The language model's topics where the suite starts it (the Foxglove bridge forwards them when
# its topics name them).
LLM_TYPES = {f"{LLM_NAMESPACE}/{topic}": type_name for topic, type_name in
             {**GENERATION_TYPES, **{t: TYPES[t] for t in (INFERENCE_STATS, ROOFLINE_REPORT, ROOFLINE_CHART)}}.items()}
KNOWN_TYPES = {**TYPES, **LLM_TYPES}

POWER_GET_MODE = "power/get_mode"
POWER_SET_MODE = "power/set_mode"
GOVERNOR_ENABLE = "governor/enable"
GOVERNOR_SET_TARGET = "governor/set_target"
