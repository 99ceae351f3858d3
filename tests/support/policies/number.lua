-- A policy file that returns a number instead of a table.
return 42
