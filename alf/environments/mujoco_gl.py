"""Pick MuJoCo's OpenGL backend for headless rendering (``MUJOCO_GL``).

MuJoCo's Python bindings and dm_control read ``MUJOCO_GL`` (``glfw``, ``egl`` or ``osmesa``)
when they first set up rendering; the default, GLFW, needs an X display. On a machine
without one (a server, CI) ``headless_mujoco_gl()`` sets ``MUJOCO_GL`` to ``egl`` when an
EGL library is installed (Mesa's renders on the CPU), else to ``osmesa`` when OSMesa is. It
changes nothing when ``MUJOCO_GL`` is already set or ``DISPLAY`` is, so a user's choice wins.
It must run before dm_control is imported (dm_control picks its backend at import).
"""

from __future__ import annotations

import ctypes.util
import os


def headless_mujoco_gl() -> str | None:
    """Set ``MUJOCO_GL`` for headless rendering if it is unset and there is no display.

    Returns:
        The value of ``MUJOCO_GL`` afterwards (None: unset, GLFW will be tried).
    """
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        if ctypes.util.find_library("EGL"):
            os.environ["MUJOCO_GL"] = "egl"
        elif ctypes.util.find_library("OSMesa"):
            os.environ["MUJOCO_GL"] = "osmesa"
    return os.environ.get("MUJOCO_GL")
