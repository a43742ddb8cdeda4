// What every page of Usher's must hold to keep its CSP (script-src 'self', no inline script): each
// script is a file, but the one JSON data block of the page's texts (pages/i18n.ts), which a
// browser never runs.
import assert from 'node:assert/strict';

/** The page's texts, from its data block; fails unless every other script element is a file. */
export function assertScriptsAreFiles(html: string, where: string): Record<string, string> {
  let texts: Record<string, string> | undefined;
  for (const script of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    const [, attributes, body] = script as unknown as [string, string, string];
    if (/\btype="application\/json"/.test(attributes)) {
      assert.equal(texts, undefined, `${where}: one data block of texts`);
      assert.match(attributes, /^\s*type="application\/json" id="texts"\s*$/, `${where}: the texts block`);
      const parsed: unknown = JSON.parse(body);
      assert.ok(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed), where);
      for (const [key, value] of Object.entries(parsed))
        assert.equal(typeof value, 'string', `${where}: the text ${key} is a string`);
      texts = parsed as Record<string, string>;
      continue;
    }
    assert.match(attributes, /\bsrc=/, `${where}: every script is a file`);
    assert.equal(body.trim(), '', `${where}: no inline script`);
  }
  assert.ok(texts, `${where}: the page carries its texts`);
  return texts;
}
