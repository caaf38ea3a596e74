"""Kubernetes resource quantities (``500Gi``, ``10``, ``500m``) as numbers.

Follows the suffixes of Kubernetes' ``resource.Quantity`` (k8s.io/apimachinery
``pkg/api/resource/quantity.go``): binary Ki..Ei, decimal k..E, milli ``m``, exponent ``e``.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from mldiag_provision.lazyre import lazy

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_QUANTITY = lazy(
    r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(text: str) -> Decimal | None:
    """``"500Gi"`` -> bytes as Decimal; ``"500m"`` -> 0.5; ``None`` when not a quantity."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2) or ""
    try:
        return number * (_BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix])
    except ArithmeticError:  # decimal.Overflow for e.g. 9e999999Ei
        return None


# The API server validates every resource request and limit with ValidateNonnegativeQuantity
# ("must be greater than or equal to 0"); lint reports a negative one from the same source.
NONNEGATIVE_SOURCE = ("https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/"
                      "validation/validation.go (ValidateNonnegativeQuantity)")


def bad_amount(field: str, raw: object) -> tuple[str, str | None, str | None] | None:
    """Why ``raw`` is not a usable amount for the recipe field ``field`` (``cpu``,
    ``memory``, ``ephemeralStorage``, ``sizeLimit``), as ``(message, hint, source)``; None
    when it is a positive quantity.

    A negative amount is named as such (Kubernetes quantities are signed: ``-3`` *is* a
    quantity, which the API server refuses), a zero one asks for nothing; only text that is
    no quantity at all is called "not a Kubernetes quantity"."""
    qty = parse_quantity(str(raw))
    if qty is None or not qty.is_finite():
        return f"'{raw}' is not a Kubernetes quantity", None, None
    if qty < 0:
        text = str(raw).strip()
        return (f"{field} {text} is negative; Kubernetes refuses a negative amount (it must be "
                "greater than or equal to 0)",
                f"give a positive amount, e.g. {text[1:]}" if text.startswith("-") else None,
                NONNEGATIVE_SOURCE)
    if qty == 0:
        return (f"{field} {str(raw).strip()} asks for nothing",
                "leave the field out, or give a positive amount", None)
    return None
