-- A policy that fails while loading.
local t = {}
error("boom at load")
return t
