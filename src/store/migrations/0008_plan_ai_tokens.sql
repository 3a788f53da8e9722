ALTER TABLE `plans` ADD `ai_tokens_monthly` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Plans made before the allowance was a plan feature keep what their sites had: 200000, the
-- default of ai.tokens_per_site_monthly, where a module can call the model (chatbot,
-- translation, content); 0 where none can (no modules, or seo alone).
UPDATE `plans` SET `ai_tokens_monthly` = 200000
WHERE EXISTS (SELECT 1 FROM json_each(`plans`.`ai_modules`) WHERE `value` IN ('chatbot', 'translation', 'content'));
