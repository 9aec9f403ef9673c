"""RDL, the Reservation Definition Language: the tree, its parser, printer, JSON and YARN forms, validation."""

from rdl.cluster import Cluster, load_cluster, parse_cluster
from rdl.errors import RDLError, RDLErrors, Span
from rdl.syntax.parser import parse_text
from rdl.tree import Absolute, All, Any, Atom, Expr, Order, Relative, Reservation, Resources, Window
from rdl.validate import validate

__all__ = [
    "Absolute", "All", "Any", "Atom", "Cluster", "Expr", "Order", "RDLError", "RDLErrors", "Relative",
    "Reservation", "Resources", "Span", "Window", "load_cluster", "parse_cluster", "parse_text", "validate",
]
