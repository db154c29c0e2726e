"""Subcommands of the ``edge-roofline`` CLI, one module each.

Each module defines ``NAME`` (the subcommand), ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int``. ``edge_roofline.cli`` discovers them, so adding a command is adding a
module here.
"""
