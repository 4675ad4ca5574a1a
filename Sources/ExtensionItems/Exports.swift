// PropertyListValue, the value of `userInfo` and of manifests, is part of this module's API.
@_exported public import PropertyLists
