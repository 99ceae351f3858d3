-- A policy with no functions at all.
return {}
