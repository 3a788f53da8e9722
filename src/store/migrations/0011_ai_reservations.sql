CREATE TABLE `ai_reservations` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`tokens` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ai_reservations_site` ON `ai_reservations` (`site_id`);--> statement-breakpoint
CREATE INDEX `ai_reservations_expiry` ON `ai_reservations` (`expires_at`);--> statement-breakpoint
-- Translations were cached per page and query string, as the model wrote the whole page (issue 23):
-- they go, and are made again from the page's text alone, escaped into its own markup.
DELETE FROM `translations`;
