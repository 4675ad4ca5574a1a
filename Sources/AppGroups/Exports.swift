// PropertyListValue, the value shared defaults store, is part of this module's API.
@_exported public import PropertyLists
