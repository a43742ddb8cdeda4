// Staff accounts for the admin tests: a role set as `usher users set-role` sets it, through the
// same service, on the test app's database.
import type { Config } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import type { AccountRole } from '../../src/users/user.ts';

export async function setRole(config: Config, email: string, role: AccountRole): Promise<void> {
  const database = openDatabase(config.databaseUrl, config.database);
  try {
    await compose(config, database).users.users.setRole(email, role);
  } finally {
    await database.close();
  }
}
