"""Stage 2: Scop + Deps -> isl schedule tree (scheduler, directives, legality)."""
