"""Topic and service names of the suite and their types: one table the nodes, the Foxglove
bridge, the recorder and the docs share. Relative names resolve in the nodes' namespace."""

POWER_TELEMETRY = "power/telemetry"
INFERENCE_STATS = "inference/stats"
ROOFLINE_REPORT = "inference/roofline"
INFERENCE_OUTPUT = "inference/output"
GOVERNOR_STATE = "governor/state"
ROOFLINE_CHART = "inference/roofline_chart/compressed"
DIAGNOSTICS = "/diagnostics"

TYPES = {
    POWER_TELEMETRY: "edge_roofline/msg/PowerTelemetry",
    INFERENCE_STATS: "edge_roofline/msg/InferenceStats",
    ROOFLINE_REPORT: "edge_roofline/msg/RooflineReport",
    INFERENCE_OUTPUT: "edge_roofline/msg/TensorArray",
    GOVERNOR_STATE: "edge_roofline/msg/GovernorState",
    ROOFLINE_CHART: "sensor_msgs/msg/CompressedImage",
    DIAGNOSTICS: "diagnostic_msgs/msg/DiagnosticArray",
}

POWER_GET_MODE = "power/get_mode"
POWER_SET_MODE = "power/set_mode"
GOVERNOR_ENABLE = "governor/enable"
GOVERNOR_SET_TARGET = "governor/set_target"
