"""Agent-owned todo lists (SPEC.md section 7): storage, editing and audit."""
