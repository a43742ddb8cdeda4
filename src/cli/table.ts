// Tables for a person at a terminal. Cells are printed as they are given (callers escape hostile
// text first, with visible()), so widths are measured on exactly what is printed.

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Characters a terminal gives two columns: emoji shown as pictures, and the East Asian wide and
 * fullwidth blocks (Hangul Jamo, CJK and Kana, Hangul syllables, compatibility ideographs,
 * fullwidth forms, the supplementary ideographic planes). An approximation of Unicode's
 * East_Asian_Width, which JavaScript's regular expressions cannot name.
 */
const WIDE =
  /\p{Emoji_Presentation}|\u20e3|\ufe0f|[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}]/u;
/** Marks that join the character before them and take no column of their own. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]+$/u;

/** The columns `text` takes on a terminal: one per grapheme, two for wide ones, none for lone marks. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const { segment } of graphemes.segment(text)) {
    if (ZERO_WIDTH.test(segment)) continue;
    width += WIDE.test(segment) ? 2 : 1;
  }
  return width;
}

export type Align = 'left' | 'right';

/**
 * Lines of a table: `header`, then `rows`, each column as wide as its widest cell, two spaces
 * between columns, and no padding after the last one.
 */
export function formatTable(
  header: readonly string[],
  rows: readonly string[][],
  align: readonly Align[],
): string[] {
  const widths = header.map((title, column) =>
    Math.max(displayWidth(title), ...rows.map((row) => displayWidth(row[column] ?? ''))),
  );
  const last = header.length - 1;
  return [header, ...rows].map((row) =>
    row
      .map((cell, column) => {
        if (column === last && align[column] !== 'right') return cell;
        const pad = ' '.repeat(widths[column]! - displayWidth(cell));
        return align[column] === 'right' ? pad + cell : cell + pad;
      })
      .join('  '),
  );
}
