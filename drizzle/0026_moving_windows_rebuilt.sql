-- The sender and code-sender windows that move (24h, 7d, 30d) rebuilt once from the day members. Before this, a bulk
-- commit put a final sender in such a window once, as presence, while a move takes out each day the window leaves by
-- its members: a sender on two days of a window was taken out whole with the first. Their rows may hold that; built
-- again (rolling-windows.ts rebuild, at the next move), they hold the sum of the days behind them, as commits now add.
UPDATE "window_bounds" SET "ready" = false WHERE "subject" IN ('sender', 'code-sender') AND "from_at" <> '-infinity';
