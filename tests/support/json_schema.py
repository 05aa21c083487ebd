"""validate(instance, schema): the errors of a JSON value against a JSON Schema
(draft 2020-12), for the keywords tests/cli/schema/*.schema.json use: type,
enum, required, properties, additionalProperties (true or false), items,
minItems and $ref to "#/$defs/NAME". A keyword it does not know is an error
of the schema, so a schema cannot silently ask more than is checked.
Standard library only (Debian's /usr/bin/python3 has no jsonschema).

Usage:
    errors = validate(report, schema)   # [] when valid; else "path: what" strings
"""

KNOWN = {"$schema", "$comment", "$defs", "title", "type", "enum", "required", "properties",
         "additionalProperties", "items", "minItems", "$ref"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(instance, schema, root=None, path="$"):
    root = root if root is not None else schema
    unknown = set(schema) - KNOWN
    if unknown:
        return [f"{path}: the schema uses keywords this checker does not know: {sorted(unknown)}"]
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            return [f"{path}: unsupported $ref {ref}"]
        return validate(instance, root["$defs"][ref[len("#/$defs/"):]], root, path)
    errors = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](instance) for t in types):
            return [f"{path}: {instance!r:.80} is not of type {' or '.join(types)}"]
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{path}: {instance!r:.80} is not one of {schema['enum']}")
    if isinstance(instance, dict):
        for key in schema.get("required", []):
            if key not in instance:
                errors.append(f"{path}: {key} is missing")
        props = schema.get("properties", {})
        for key, value in instance.items():
            if key in props:
                errors += validate(value, props[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties", True) is False:
                errors.append(f"{path}: {key} is not allowed")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            errors.append(f"{path}: {len(instance)} items, fewer than {schema['minItems']}")
        if "items" in schema:
            for k, item in enumerate(instance):
                errors += validate(item, schema["items"], root, f"{path}[{k}]")
    return errors
