"""The two rules of .importlinter that its own contract types cannot say, as contract types of
their own (import-linter's `contract_types`): no app imports another app's private modules
or names, and core names no app, in an import or in a dotted path in a string. Tests and
migrations are left out, as in every contract."""

import ast
from pathlib import Path

import grimp
from importlinter import Contract, ContractCheck, fields, output

ROOT = Path(__file__).resolve().parents[1]


def checked_modules(graph: grimp.ImportGraph, package: str) -> list[str]:
    """The modules of a root package that the contracts check: all but tests and migrations."""
    return sorted(module for module in graph.find_descendants(package) | {package}
                  if not {"tests", "migrations"} & set(module.split(".")))


def source(module: str) -> str:
    """The module's source, found without importing it (nothing of Django is set up here)."""
    path = ROOT.joinpath(*module.split("."))
    return (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()


def imports(text: str):
    """(module, names) of every absolute import in the source, at any depth."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [alias.name for alias in node.names]


def private_imports(module: str, text: str, packages: set[str]) -> list[str]:
    """The private modules (`_something`) or names of another of `packages` that `module` imports."""
    found = []
    for imported, names in imports(text):
        if imported.split(".")[0] not in packages - {module.split(".")[0]}:
            continue
        private = [part for part in imported.split(".")[1:] if part.startswith("_") and part != "__init__"]
        private += [name for name in names if name.startswith("_")]
        if private:
            found.append(f"{module} imports {', '.join(private)} of {imported}")
    return found


def named_packages(text: str, packages: set[str]) -> list[str]:
    """The packages that code (not prose: docstrings and comments are left out) names in a
    string as a dotted path (`"spaces.authentication.ApiKeyAuthentication"`). A plain word
    that happens to be a package's name (a label such as "pages") is no reference."""
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
        and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value.split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        and "." in node.value and node.value.split(".")[0] in packages
    ]


class SourceContract(Contract):
    """A rule read from the source of each checked module of `packages`."""

    packages = fields.ListField(subfield=fields.StringField())

    def problems(self, module: str, text: str) -> list[str]:
        raise NotImplementedError

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        found = [problem for package in self.packages for module in checked_modules(graph, package)
                 for problem in self.problems(module, source(module))]
        return ContractCheck(kept=not found, warnings=[], metadata={"problems": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for problem in check.metadata["problems"]:
            output.print_error(problem, bold=False)
            output.new_line()


class PrivateContract(SourceContract):
    """No module of `packages` imports another root package's private modules or names."""

    def problems(self, module: str, text: str) -> list[str]:
        return private_imports(module, text, set(self.packages))


class NamesNoPackageContract(SourceContract):
    """The modules of `packages` name none of `names` in a string (a dotted path is an import
    in disguise: a setting, a schema hook's target)."""

    names = fields.ListField(subfield=fields.StringField())

    def problems(self, module: str, text: str) -> list[str]:
        return [f"{module} names {name} in a string" for name in named_packages(text, set(self.names))]
