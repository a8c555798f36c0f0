"""The resume layer's engine: checkpoint fixtures — their format, extraction, safe restore, the
environment contract — and booting from a checkpoint. No pytest here; `layer.py` is the face.
"""

from .boot import ResumePoint, resume_point_from_trace
from .restore import Entry

__all__ = ["Entry", "ResumePoint", "resume_point_from_trace"]
