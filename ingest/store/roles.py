"""The roles of users, lowest first (a light module: the command-line parser needs them)."""

ROLES = ("viewer", "operator", "admin")
ROLE_RANK = {role: rank for rank, role in enumerate(ROLES)}
