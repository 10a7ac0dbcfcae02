// One city's free rooms laid out night by night over a fixed window of days: row = night, column = the city's room
// types (in id order). An availability search reads the rows of its nights, each one contiguous, and keeps a running
// minimum per column: a few KB read in order, where a walk room type by room type touched each one's own array
// (cache misses, about 100 µs a search for a city of 600 room types in a busy process). Derived from StayCalendar's
// nights: made at a city's first search after its room types changed, kept current night by night. The window is
// fixed (MATRIX_DAYS from its start), so a night stored years away (inventory may be set on any date) costs nothing
// here: a search reaching outside the window is answered from the nights themselves.

/** Days a matrix holds from its start: two years and then some (the index starts two days back). */
export const MATRIX_DAYS = 800;

/** A night with no row (not opened for sale): it excludes the room type, as it is below any count of rooms asked. */
export const ABSENT = -0x80000000;

/** What a room type's nights hold where no night row exists. */
export const NO_ROW = -1;

/** A room type's nights: free rooms from day `base` on, NO_ROW where no night row exists. */
export interface NightsView {
  base: number;
  free: Int32Array;
}

export class CityNights {
  private readonly free: Int32Array;

  private constructor(readonly start: number, readonly cols: number) {
    this.free = new Int32Array(MATRIX_DAYS * cols).fill(ABSENT);
  }

  /** The matrix of `columns` (each room type's nights, or undefined when it has none yet) from day `start`. */
  static of(start: number, columns: readonly (NightsView | undefined)[]): CityNights {
    const m = new CityNights(start, columns.length);
    columns.forEach((n, col) => {
      if (!n) return;
      const from = Math.max(n.base, start);
      const to = Math.min(n.base + n.free.length, start + MATRIX_DAYS);
      for (let day = from; day < to; day++) {
        const f = n.free[day - n.base]!;
        if (f !== NO_ROW) m.free[(day - start) * m.cols + col] = f;
      }
    });
    return m;
  }

  /** Sets a night of column `col` (a night outside the window is not kept here). */
  set(col: number, day: number, free: number): void {
    if (day >= this.start && day < this.start + MATRIX_DAYS) this.free[(day - this.start) * this.cols + col] = free === NO_ROW ? ABSENT : free;
  }

  /**
   * Fills `out[col]` with the minimum free rooms of each column over the nights [from, to) (ABSENT where a night has
   * no row); false when the nights are not all inside the window (the caller asks the nights themselves).
   */
  minOver(from: number, to: number, out: Int32Array): boolean {
    if (!(to > from) || from < this.start || to > this.start + MATRIX_DAYS) return false;
    const cols = this.cols;
    const free = this.free;
    let row = (from - this.start) * cols;
    for (let c = 0; c < cols; c++) out[c] = free[row + c]!;
    for (let d = from + 1; d < to; d++) {
      row += cols;
      for (let c = 0; c < cols; c++) {
        const f = free[row + c]!;
        if (f < out[c]!) out[c] = f;
      }
    }
    return true;
  }
}
