"""A governor whose start is interrupted once its runtime has found the board, before the node's
topics and timer are made (test_node_signals): Ctrl-C in the middle of its start."""

import os
import signal
import sys
import time

from edge_roofline.nodes.common import run_node
from edge_roofline.nodes.governor import GovernorNode


class InterruptedGovernor(GovernorNode):
    def _start(self, p: dict) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the handler runs here: the runtime holds the board's lock and its record
        super()._start(p)


if __name__ == "__main__":
    sys.exit(run_node(InterruptedGovernor, sys.argv))
