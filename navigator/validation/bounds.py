"""The argument validator's bounds (SPEC §5), as one value object.

Each bound keeps one kind of work finite whatever a schema or an argument says; exceeding any of
them makes the answer ``tool_validation_unavailable``, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "ValidationLimits"]


@dataclass(frozen=True, slots=True)
class ValidationLimits:
    """How much work one schema and one validation may ask for."""

    #: Subschema levels along the evaluation path; a ``$ref`` hop counts as one level too.
    max_depth: int = 32
    #: Nesting of the arguments themselves, whatever the schema looks at: the arguments object is
    #: level 1, each array or object inside it one more. Checked (and the evaluation path held to
    #: ``max_depth``) well before anything that carries the arguments on — digests, JSON encoders
    #: — could recurse as deep as Python allows.
    max_argument_depth: int = 64
    #: JSON values (objects, arrays and scalars alike) in the schema and the arguments together.
    max_nodes: int = 8_192
    #: UTF-16 code units of every string and object key in the schema and the arguments together.
    max_code_units: int = 262_144
    #: Keyword evaluations and member visits in one validation.
    max_steps: int = 65_536
    #: UTF-16 code units of one ``pattern`` or ``patternProperties`` key.
    max_pattern_units: int = 512
    #: RE2 program instructions of all of a schema's patterns together: compiling costs about a
    #: microsecond an instruction, and each search's DFA cache grows with the program.
    max_pattern_program: int = 131_072


DEFAULT_LIMITS = ValidationLimits()
