"""The meanings of the keywords of JSON's strings and numbers, each as a check built once.

As ``keywords``: every function takes a keyword's already-checked schema value and returns a
``Check`` closure; the compiler decides which keywords a node has and in which order.
"""

from __future__ import annotations

from typing import Final

from navigator.validation.evaluation import Check, Failure, Run
from navigator.validation.patterns import Pattern

__all__ = [
    "lower_bound",
    "max_length",
    "min_length",
    "multiple_of",
    "pattern",
    "upper_bound",
]


# -- strings -----------------------------------------------------------------------------------


def min_length(limit: int) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if len(instance) >= limit else Failure("minLength")  # code points

    return check


def max_length(limit: int) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if len(instance) <= limit else Failure("maxLength")

    return check


def pattern(compiled: Pattern) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if compiled.search(instance, run.spend) else Failure("pattern")

    return check


# -- numbers -----------------------------------------------------------------------------------


def lower_bound(limit: float, *, exclusive: bool, keyword: str) -> Check:
    """``minimum``/``exclusiveMinimum``; Python compares ``int`` and ``float`` exactly."""
    if exclusive:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance > limit else Failure(keyword)

    else:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance >= limit else Failure(keyword)

    return check


def upper_bound(limit: float, *, exclusive: bool, keyword: str) -> Check:
    if exclusive:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance < limit else Failure(keyword)

    else:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance <= limit else Failure(keyword)

    return check


#: ``multipleOf`` charges one work step per 2**16 (bit x bit) of its division's operands: about
#: 0.2 µs of Python's long division, measured at 340 µs for 14,281 bits by 7,143 (1,577 steps).
_DIVISION_SHIFT: Final = 16


def _decimal(number: float) -> tuple[int, int]:
    """A number as the decimal it was written as, ``(m, e)`` for ``m * 10**e``: ``0.0075`` is
    75 * 10**-4, not its binary float. Read from the float's shortest repr, in integers alone
    (a ``Decimal`` and a ``Fraction`` made of it cost about 2 µs a number more)."""
    if type(number) is int:
        return number, 0
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    return int(whole + fraction), int(exponent or 0) - len(fraction)


def multiple_of(divisor: float) -> Check:
    """Exact decimal arithmetic: no float rounding, no overflow however large the numbers.

    ``a`` is a multiple of ``d`` when ``m_a * 10**(e_a - e_d)`` divides by ``m_d`` (the power
    moved to ``m_d`` when negative): integers all the way, no larger than a float's exponent
    range makes them. Exact is not free: JSON carries integers of 4,300 digits, and dividing one
    by a divisor of half as many takes about 340 µs, so a step a keyword would let a fan-out of
    such divisions run for seconds. Each division is charged first, by the product of its
    operands' sizes in bits (what long division costs); numbers of a few machine words cost
    nothing extra."""
    divisor_mantissa, divisor_exponent = _decimal(divisor)

    def check(instance: float, depth: int, run: Run) -> Failure | None:
        mantissa, exponent = _decimal(instance)
        shift = exponent - divisor_exponent
        if shift >= 0:
            dividend, modulus = mantissa * 10**shift, divisor_mantissa
        else:
            dividend, modulus = mantissa, divisor_mantissa * 10**-shift
        run.spend(((dividend.bit_length() + 64) * (modulus.bit_length() + 64)) >> _DIVISION_SHIFT)
        return None if dividend % modulus == 0 else Failure("multipleOf")

    return check
