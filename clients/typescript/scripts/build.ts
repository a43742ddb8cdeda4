// Builds dist/ for the package (`npm run build`, and `prepack`, so `npm pack` and `npm publish`
// always ship JavaScript made from the sources of that moment): the JavaScript that browsers,
// bundlers and Node load, and the .d.ts files TypeScript reads. Node refuses to strip types under
// node_modules, and a consumer's tsc would check our sources with its own settings, so the
// package ships no TypeScript source. The repository itself keeps importing src/ directly.
//
// The sources import each other as `./client.ts` (Node runs them as they are). TypeScript
// rewrites those specifiers to `.js` in the JavaScript it emits (rewriteRelativeImportExtensions)
// but not in declaration files, which would then name files the package does not ship:
// TypeScript 5 looks for the .d.ts beside them, but TypeScript 4 reports TS2691 for each and a
// tool that follows a specifier to its file finds nothing. The transformer below rewrites them
// in the declarations too.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const CONFIG = fileURLToPath(new URL('../tsconfig.build.json', import.meta.url));

/** `./x.ts` → `./x.js` (and .mts/.cts); bare and non-relative specifiers are left alone. */
export function rewrittenSpecifier(specifier: string): string {
  if (!/^\.\.?\//.test(specifier) || /\.d\.[mc]?ts$/.test(specifier)) return specifier;
  return specifier.replace(/\.([mc]?)ts$/, '.$1js');
}

const rewriteDeclarationImports: ts.TransformerFactory<ts.SourceFile | ts.Bundle> = (context) => {
  const { factory } = context;
  const literal = (node: ts.Expression | undefined): ts.StringLiteral | undefined => {
    if (!node || !ts.isStringLiteral(node)) return undefined;
    const rewritten = rewrittenSpecifier(node.text);
    return rewritten === node.text ? undefined : factory.createStringLiteral(rewritten);
  };
  const visit = (node: ts.Node): ts.Node => {
    if (ts.isImportDeclaration(node)) {
      const specifier = literal(node.moduleSpecifier);
      if (specifier) {
        return factory.updateImportDeclaration(
          node,
          node.modifiers,
          node.importClause,
          specifier,
          node.attributes,
        );
      }
    } else if (ts.isExportDeclaration(node)) {
      const specifier = literal(node.moduleSpecifier);
      if (specifier) {
        return factory.updateExportDeclaration(
          node,
          node.modifiers,
          node.isTypeOnly,
          node.exportClause,
          specifier,
          node.attributes,
        );
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const specifier = literal(node.argument.literal as ts.Expression);
      if (specifier) {
        return factory.updateImportTypeNode(
          node,
          factory.updateLiteralTypeNode(node.argument, specifier),
          node.attributes,
          node.qualifier,
          node.typeArguments,
          node.isTypeOf,
        );
      }
    }
    return ts.visitEachChild(node, visit, context);
  };
  return (file) => ts.visitEachChild(file, visit, context) as typeof file;
};

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  process.stderr.write(
    ts.formatDiagnosticsWithColorAndContext(diagnostics, {
      getCanonicalFileName: (name) => name,
      getCurrentDirectory: ts.sys.getCurrentDirectory,
      getNewLine: () => '\n',
    }),
  );
  process.exit(1);
}

export function build(): void {
  const parsed = ts.getParsedCommandLineOfConfigFile(CONFIG, undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => fail([diagnostic]),
  });
  if (!parsed) throw new Error(`cannot read ${CONFIG}`);
  if (parsed.errors.length > 0) fail(parsed.errors);
  const outDir = parsed.options.outDir;
  if (!outDir) throw new Error(`${CONFIG} names no outDir`);
  // A file removed from src/ must not live on in the package.
  rmSync(outDir, { recursive: true, force: true });
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const emitted = program.emit(undefined, undefined, undefined, false, {
    afterDeclarations: [rewriteDeclarationImports],
  });
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
  if (diagnostics.length > 0 || emitted.emitSkipped) fail(diagnostics);
}

if (import.meta.main) build();
